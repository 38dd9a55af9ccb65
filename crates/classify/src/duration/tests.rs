//! The duration syntaxes, one case per rule: units, order, bare numbers, range, saturation.

use super::*;

const GROUPS: DurationSyntax = DurationSyntax::unit_groups(60, 366 * 86_400);
const MIN_SEC: DurationSyntax = DurationSyntax::minutes_and_seconds(1, 600);

/// The longest a single parse may take before the test binary gives up on it.
const PARSE_BOUND: std::time::Duration = std::time::Duration::from_secs(5);

/// [`super::parse_duration`], bounded: every test here calls this one (it shadows the glob
/// import), so a parse that never ends (the `+ with -` mutant of `sum_of_groups`' step past the
/// unit letter, which re-reads the same group forever) fails within [`PARSE_BOUND`] instead of
/// holding the test binary until the mutation run's timeout. A spinning thread cannot be
/// stopped, and libtest waits for every running test, so the watchdog ends the process.
fn parse_duration(text: &str, syntax: &DurationSyntax) -> Result<u64, DurationError> {
    let (text, syntax) = (text.to_owned(), *syntax);
    let (send, answer) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = send.send(super::parse_duration(&text, &syntax));
    });
    match answer.recv_timeout(PARSE_BOUND) {
        Ok(parsed) => parsed,
        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => panic!("parse_duration panicked"),
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
            eprintln!("parse_duration did not return within {PARSE_BOUND:?}: it loops");
            std::process::exit(101)
        }
    }
}

/// Every unit is its length in seconds, and groups add up in any order and number. Through the
/// bounded [`parse_duration`], this kills `replace + with - in sum_of_groups` (the step past the
/// unit letter) within seconds: the mutant re-reads `2h` forever.
#[test]
fn unit_groups_add_up() {
    assert_eq!(parse_duration("2h", &GROUPS), Ok(7_200));
    assert_eq!(parse_duration("90m", &GROUPS), Ok(5_400));
    assert_eq!(parse_duration("1h30m", &GROUPS), Ok(5_400));
    assert_eq!(parse_duration("30m1h", &GROUPS), Ok(5_400));
    assert_eq!(parse_duration("1h1h", &GROUPS), Ok(7_200));
    assert_eq!(parse_duration("3600s", &GROUPS), Ok(3_600));
    assert_eq!(parse_duration("1d2h", &GROUPS), Ok(93_600));
    assert_eq!(parse_duration("007m", &GROUPS), Ok(420));
}

/// Anything but `<digits><unit>` groups is malformed, a bare number included.
#[test]
fn unit_groups_refuse_other_spellings() {
    for bad in [
        "", "2", "h", "2x", "1.5h", "-1h", "+1h", " 2h", "2h ", "2H", "h2", "1h30", "1hh", "2é",
        "٣h",
    ] {
        assert_eq!(
            parse_duration(bad, &GROUPS),
            Err(DurationError::Malformed),
            "{bad:?}"
        );
    }
}

/// The range is inclusive at both ends and each side names the seconds written.
#[test]
fn the_range_is_inclusive() {
    assert_eq!(parse_duration("1m", &GROUPS), Ok(60));
    assert_eq!(parse_duration("366d", &GROUPS), Ok(366 * 86_400));
    assert_eq!(
        parse_duration("59s", &GROUPS),
        Err(DurationError::TooShort { seconds: 59 })
    );
    assert_eq!(
        parse_duration("0m", &GROUPS),
        Err(DurationError::TooShort { seconds: 0 })
    );
    assert_eq!(
        parse_duration("367d", &GROUPS),
        Err(DurationError::TooLong {
            seconds: 367 * 86_400
        })
    );
    assert_eq!(MIN_SEC.check(600), Ok(600));
    assert_eq!(
        MIN_SEC.check(601),
        Err(DurationError::TooLong { seconds: 601 })
    );
    assert_eq!(
        MIN_SEC.check(0),
        Err(DurationError::TooShort { seconds: 0 })
    );
}

/// A number too large to count saturates: too long, never a wrapped small value; a malformed
/// text stays malformed however large its numbers.
#[test]
fn huge_numbers_saturate() {
    let too_long = Err(DurationError::TooLong { seconds: u64::MAX });
    assert_eq!(
        parse_duration("99999999999999999999999s", &GROUPS),
        too_long
    );
    assert_eq!(parse_duration("999999999999999999d", &GROUPS), too_long);
    assert_eq!(parse_duration("18446744073709551615s1s", &GROUPS), too_long);
    assert_eq!(parse_duration("99999999999999999999", &MIN_SEC), too_long);
    assert_eq!(parse_duration("99999999999999999999m", &MIN_SEC), too_long);
    assert_eq!(
        parse_duration("99999999999999999999sx", &GROUPS),
        Err(DurationError::Malformed)
    );
    let unbounded = DurationSyntax::minutes_and_seconds(0, u64::MAX);
    assert_eq!(
        parse_duration("18446744073709551615", &unbounded),
        Ok(u64::MAX)
    );
}

/// Minutes and seconds: a bare number is seconds; `m` then `s`, each at most once.
#[test]
fn minutes_and_seconds_accept_their_spellings() {
    for (text, secs) in [
        ("90", 90),
        ("90s", 90),
        ("5m", 300),
        ("2m30s", 150),
        ("0m1s", 1),
        ("600", 600),
    ] {
        assert_eq!(parse_duration(text, &MIN_SEC), Ok(secs), "{text}");
    }
}

/// Minutes and seconds refuse other units, other orders, repeats and trailing numbers.
#[test]
fn minutes_and_seconds_refuse_other_spellings() {
    for bad in [
        "", "s", "m", "ms", "3x", "-1", "1.5s", "1h", "1d", "3s1m", "1m1m", "1s1s", "1m30", " 3s",
        "1ms", "m5s", "5 s",
    ] {
        assert_eq!(
            parse_duration(bad, &MIN_SEC),
            Err(DurationError::Malformed),
            "{bad:?}"
        );
    }
    assert_eq!(
        parse_duration("0", &MIN_SEC),
        Err(DurationError::TooShort { seconds: 0 })
    );
}

/// The syntax reports its units and range as given.
#[test]
fn a_syntax_reports_its_parameters() {
    assert_eq!(GROUPS.units(), &Unit::ALL);
    assert_eq!(MIN_SEC.units(), &[Unit::Minute, Unit::Second]);
    assert_eq!((GROUPS.min(), GROUPS.max()), (60, 366 * 86_400));
    let letters: String = Unit::ALL.iter().map(|u| u.letter()).collect();
    assert_eq!(letters, "dhms");
    let lengths: Vec<u64> = Unit::ALL.iter().map(|u| u.seconds()).collect();
    assert_eq!(lengths, [86_400, 3_600, 60, 1]);
}

/// The one span renderer keeps the two largest units, truncated, and drops a zero second unit;
/// nothing negative is shown.
#[test]
fn spans_read_like_kubectl_ages() {
    for (seconds, text) in [
        (-5, "0s"),
        (0, "0s"),
        (1, "1s"),
        (59, "59s"),
        (60, "1m"),
        (90, "1m30s"),
        (3_599, "59m59s"),
        (3_600, "1h"),
        (3_605, "1h"),
        (3_660, "1h1m"),
        (86_400 + 60, "1d"),
        (2 * 86_400 + 4 * 3_600 + 59, "2d4h"),
    ] {
        assert_eq!(render_span(seconds), text, "{seconds}");
    }
}
