//! The `--ttl` syntax, the instant's wire form, expiry by the server clock and the time left.

use super::*;
use crate::testkit::marks;

/// Every unit and their combinations are whole seconds; the bounds are inclusive.
#[test]
fn ttl_accepts_units_and_groups() {
    assert_eq!(parse_ttl("2h"), Ok(7_200));
    assert_eq!(parse_ttl("90m"), Ok(5_400));
    assert_eq!(parse_ttl("1h30m"), Ok(5_400));
    assert_eq!(parse_ttl("3600s"), Ok(3_600));
    assert_eq!(parse_ttl("1d2h"), Ok(93_600));
    assert_eq!(parse_ttl("1m"), Ok(MIN_TTL_SECS));
    assert_eq!(parse_ttl("366d"), Ok(MAX_TTL_SECS));
}

/// Anything but `<digits><unit>` groups is malformed; out-of-range values name their bound.
#[test]
fn ttl_refuses_malformed_and_out_of_range() {
    for bad in [
        "", "2", "h", "2x", "1.5h", "-1h", " 2h", "2h ", "2H", "h2", "1h30",
    ] {
        assert_eq!(parse_ttl(bad), Err(TtlError::Malformed), "{bad:?}");
    }
    assert_eq!(parse_ttl("59s"), Err(TtlError::TooShort));
    assert_eq!(parse_ttl("0m"), Err(TtlError::TooShort));
    assert_eq!(parse_ttl("367d"), Err(TtlError::TooLong));
    assert_eq!(
        parse_ttl("99999999999999999999999s"),
        Err(TtlError::TooLong)
    );
    assert_eq!(parse_ttl("999999999999999999d"), Err(TtlError::TooLong));
    assert!(TtlError::Malformed.to_string().contains("1h30m"));
}

/// The wire form pins known instants (the epoch, a leap day, the `Date` vector of A1).
#[test]
fn instants_have_a_fixed_wire_form() {
    assert_eq!(format_instant(0), "1970-01-01T00:00:00Z");
    assert_eq!(format_instant(951_782_400), "2000-02-29T00:00:00Z");
    assert_eq!(format_instant(1_785_643_200), "2026-08-02T04:00:00Z");
    assert_eq!(parse_instant("2026-08-02T04:00:00Z"), Some(1_785_643_200));
    assert_eq!(parse_instant("2000-02-29T00:00:00Z"), Some(951_782_400));
    assert_eq!(parse_instant("1969-12-31T23:59:59Z"), Some(-1));
}

/// Anything but the exact wire form is no expiry (ambiguity never makes a pod collectable).
#[test]
fn malformed_instants_are_no_expiry() {
    for bad in [
        "",
        "2026-08-02T04:00:00",
        "2026-08-02T04:00:00+00:00",
        "2026-08-02T04:00:00.5Z",
        "2026-08-02t04:00:00z",
        " 2026-08-02T04:00:00Z",
        "2026-13-02T04:00:00Z",
        "2026-02-29T04:00:00Z",
        "2100-02-29T00:00:00Z",
        "2026-04-31T04:00:00Z",
        "2026-08-00T04:00:00Z",
        "2026-08-02T24:00:00Z",
        "2026-08-02T04:60:00Z",
        "2026-08-02T04:00:60Z",
        "2026-08-02T04:+0:00Z",
        "1785643200",
        // One separator wrong at a time, every digit still in place.
        "2026/08-02T04:00:00Z",
        "2026-08/02T04:00:00Z",
        "2026-08-02 04:00:00Z",
        "2026-08-02T04.00:00Z",
        "2026-08-02T04:00.00Z",
        "2026-08-02T04:00:00z",
    ] {
        assert_eq!(parse_instant(bad), None, "{bad:?}");
    }
}

/// Format and parse are inverse over years 0000..=9999, day by day at varied times.
#[test]
fn format_and_parse_round_trip() {
    let first = parse_instant("0000-01-01T00:00:00Z").expect("year 0");
    let last = parse_instant("9999-12-31T23:59:59Z").expect("year 9999");
    let mut t = first;
    while t <= last {
        assert_eq!(parse_instant(&format_instant(t)), Some(t), "{t}");
        t += 86_400 * 7 + 3_661;
    }
}

/// The expiry comes from the annotation in the marks only; absent or malformed is none.
#[test]
fn expiry_of_reads_the_annotation() {
    let mut m = marks("p", "u", "1");
    assert_eq!(expiry_of(&m), None);
    m.expires_at = Some("2026-08-02T04:00:00Z".into());
    assert_eq!(expiry_of(&m), Some(1_785_643_200));
    m.expires_at = Some("tomorrow".into());
    assert_eq!(expiry_of(&m), None);
}

/// The instant itself is expired; one second before is not. Kills `>=` → `>`.
#[test]
fn expired_at_the_instant_itself() {
    assert!(!is_expired(100, 99));
    assert!(is_expired(100, 100));
    assert!(is_expired(100, 101));
    assert_eq!(seconds_left(100, 40), 60);
    assert_eq!(seconds_left(100, 140), -40);
    assert_eq!(expires_at(1_000, 7_200), 8_200);
    assert_eq!(expires_at(i64::MAX - 1, 7_200), i64::MAX);
}

/// The time left reads as the two largest units, or `expired`.
#[test]
fn time_left_renders_two_units() {
    assert_eq!(render_time_left(0), "expired");
    assert_eq!(render_time_left(-5), "expired");
    assert_eq!(render_time_left(59), "59s");
    assert_eq!(render_time_left(250), "4m10s");
    assert_eq!(render_time_left(7_140), "1h59m");
    assert_eq!(render_time_left(7_200), "2h");
    assert_eq!(render_time_left(183_600 + 59), "2d3h");
}
