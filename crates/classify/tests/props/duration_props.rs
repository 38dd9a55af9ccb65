//! Property tests of the one duration parser (deploy.md § Timeout, § Expiry, § logs, § Staying
//! up): a duration written in a syntax's units parses back to its seconds, in range or refused
//! by the bound it crosses; groups in any order add up where the syntax allows any order; and
//! no text at all, garbage included, makes it panic or accept a value out of range. Pure.

use apiary_classify::duration::{DurationError, DurationSyntax, Unit, parse_duration};
use proptest::prelude::*;

const MAX: u64 = 366 * 86_400;

/// The canonical spelling of `seconds` in `units` (largest first): each non-zero group once,
/// `0<smallest unit>` for zero.
fn format(seconds: u64, units: &[Unit]) -> String {
    let mut rest = seconds;
    let mut text = String::new();
    for unit in units {
        let n = rest / unit.seconds();
        rest %= unit.seconds();
        if n > 0 {
            text.push_str(&format!("{n}{}", unit.letter()));
        }
    }
    if text.is_empty() {
        let smallest = units.last().expect("a syntax has a unit");
        text = format!("0{}", smallest.letter());
    }
    text
}

/// Two syntaxes, one of each kind, over an arbitrary range.
fn syntax() -> impl Strategy<Value = DurationSyntax> {
    (any::<bool>(), 0..=MAX, 0..=MAX).prop_map(|(groups, a, b)| {
        let (min, max) = (a.min(b), a.max(b));
        if groups {
            DurationSyntax::unit_groups(min, max)
        } else {
            DurationSyntax::minutes_and_seconds(min, max)
        }
    })
}

/// Text near the syntax: digits, every unit letter, and a few characters that must be refused.
fn near_text() -> impl Strategy<Value = String> {
    "[0-9dhmsDx .+\\-é]{0,12}"
}

proptest! {
    /// Format then parse: the canonical spelling of any duration reads back as its seconds
    /// when in range, and as the bound it crosses otherwise.
    #[test]
    fn format_then_parse_round_trips(syntax in syntax(), seconds in 0..=2 * MAX) {
        let text = format(seconds, syntax.units());
        let expected = if seconds < syntax.min() {
            Err(DurationError::TooShort { seconds })
        } else if seconds > syntax.max() {
            Err(DurationError::TooLong { seconds })
        } else {
            Ok(seconds)
        };
        prop_assert_eq!(parse_duration(&text, &syntax), expected, "{}", text);
    }

    /// A bare number is seconds where the syntax allows it, malformed where it does not.
    #[test]
    fn a_bare_number_is_seconds_or_refused(seconds in 0..=MAX) {
        let text = seconds.to_string();
        let bare = DurationSyntax::minutes_and_seconds(0, MAX);
        prop_assert_eq!(parse_duration(&text, &bare), Ok(seconds));
        let groups = DurationSyntax::unit_groups(0, MAX);
        prop_assert_eq!(parse_duration(&text, &groups), Err(DurationError::Malformed));
    }

    /// Where any order is allowed, groups in any order and number add up.
    #[test]
    fn groups_in_any_order_add_up(groups in prop::collection::vec((0u64..1_000, 0usize..4), 1..6)) {
        let text: String = groups
            .iter()
            .map(|&(n, u)| format!("{n}{}", Unit::ALL[u].letter()))
            .collect();
        let sum: u64 = groups.iter().map(|&(n, u)| n * Unit::ALL[u].seconds()).sum();
        let syntax = DurationSyntax::unit_groups(0, u64::MAX);
        prop_assert_eq!(parse_duration(&text, &syntax), Ok(sum), "{}", text);
    }

    /// Minutes and seconds out of order, or a unit written twice, are malformed.
    #[test]
    fn minutes_and_seconds_want_each_unit_once_largest_first(a in 0u64..1_000, b in 0u64..1_000) {
        let syntax = DurationSyntax::minutes_and_seconds(0, u64::MAX);
        for text in [format!("{a}s{b}m"), format!("{a}m{b}m"), format!("{a}s{b}s")] {
            prop_assert_eq!(parse_duration(&text, &syntax), Err(DurationError::Malformed), "{}", text);
        }
    }

    /// Garbage near the syntax never panics, and whatever it accepts is in range and written
    /// only in digits and the syntax's own unit letters.
    #[test]
    fn garbage_never_panics_nor_escapes_the_range(syntax in syntax(), text in near_text()) {
        check_any(&syntax, &text)?;
    }

    /// Arbitrary text, any characters at all, never panics either.
    #[test]
    fn arbitrary_text_never_panics(syntax in syntax(), text in any::<String>()) {
        check_any(&syntax, &text)?;
    }
}

/// Whatever `text` gives, an accepted value lies in range and the text was digits and the
/// syntax's letters; a range refusal names the bound it crosses.
fn check_any(syntax: &DurationSyntax, text: &str) -> Result<(), TestCaseError> {
    match parse_duration(text, syntax) {
        Ok(seconds) => {
            prop_assert!((syntax.min()..=syntax.max()).contains(&seconds));
            prop_assert!(
                text.chars()
                    .all(|c| c.is_ascii_digit() || syntax.units().iter().any(|u| u.letter() == c)),
                "{:?}",
                text
            );
        }
        Err(DurationError::TooShort { seconds }) => prop_assert!(seconds < syntax.min()),
        Err(DurationError::TooLong { seconds }) => prop_assert!(seconds > syntax.max()),
        Err(DurationError::Malformed) => {}
    }
    Ok(())
}
