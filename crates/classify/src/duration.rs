//! Durations on the command line (deploy.md § Timeout, § Expiry, § logs, § Staying up): the one
//! parser behind `--timeout`, `--ttl`, `--since` and `--min-running`, each flag giving its units,
//! its order rule and its range as a [`DurationSyntax`].
//!
//! Pure: text in, whole seconds or a [`DurationError`] out. No clock, no I/O, no message text:
//! each caller builds its own refusal (the flag, the problem, the fix) from the error value.
//!
//! And the one renderer of a span for people, [`render_span`]: `list`'s AGE and the time left
//! before an expiry (`status`, `list`) both read it.

/// A unit a duration is written in, as the letter after a whole number.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// `d`: 86 400 seconds.
    Day,
    /// `h`: 3 600 seconds.
    Hour,
    /// `m`: 60 seconds.
    Minute,
    /// `s`: one second.
    Second,
}

impl Unit {
    /// Every unit, largest first.
    pub const ALL: [Unit; 4] = [Unit::Day, Unit::Hour, Unit::Minute, Unit::Second];

    /// The unit's length in seconds.
    pub const fn seconds(self) -> u64 {
        match self {
            Unit::Day => 86_400,
            Unit::Hour => 3_600,
            Unit::Minute => 60,
            Unit::Second => 1,
        }
    }

    /// The letter that writes the unit.
    pub const fn letter(self) -> char {
        match self {
            Unit::Day => 'd',
            Unit::Hour => 'h',
            Unit::Minute => 'm',
            Unit::Second => 's',
        }
    }
}

/// One flag's duration syntax: the units it accepts, how groups may follow one another, whether
/// a bare number is seconds, and the inclusive range of whole seconds it accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DurationSyntax {
    units: &'static [Unit],
    descending: bool,
    bare_seconds: bool,
    min: u64,
    max: u64,
}

impl DurationSyntax {
    /// `<number><unit>` groups with units `d`, `h`, `m`, `s` in any order and number (`2h`,
    /// `90m`, `1h30m`, `3600s`); a bare number is refused (the `--ttl` and `--since` syntax).
    pub const fn unit_groups(min: u64, max: u64) -> Self {
        DurationSyntax {
            units: &Unit::ALL,
            descending: false,
            bare_seconds: false,
            min,
            max,
        }
    }

    /// A bare number of seconds, or minutes then seconds, each at most once (`90`, `90s`, `5m`,
    /// `2m30s`; never `30s2m` or `1h`): the `--timeout` and `--min-running` syntax.
    pub const fn minutes_and_seconds(min: u64, max: u64) -> Self {
        DurationSyntax {
            units: &[Unit::Minute, Unit::Second],
            descending: true,
            bare_seconds: true,
            min,
            max,
        }
    }

    /// The units this syntax accepts, largest first.
    pub const fn units(&self) -> &'static [Unit] {
        self.units
    }

    /// The shortest duration accepted, in seconds.
    pub const fn min(&self) -> u64 {
        self.min
    }

    /// The longest duration accepted, in seconds.
    pub const fn max(&self) -> u64 {
        self.max
    }

    /// Whether `seconds` lies in this syntax's range.
    ///
    /// # Errors
    /// [`DurationError::TooShort`] below the range, [`DurationError::TooLong`] above it.
    pub const fn check(&self, seconds: u64) -> Result<u64, DurationError> {
        if seconds < self.min {
            Err(DurationError::TooShort { seconds })
        } else if seconds > self.max {
            Err(DurationError::TooLong { seconds })
        } else {
            Ok(seconds)
        }
    }
}

/// Why a duration was refused; the caller names the flag and the fix around it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DurationError {
    /// Empty, or not written in the syntax's units and order.
    Malformed,
    /// Well formed, shorter than the syntax's minimum.
    TooShort {
        /// The duration written, in seconds.
        seconds: u64,
    },
    /// Well formed, longer than the syntax's maximum.
    TooLong {
        /// The duration written, in seconds (`u64::MAX` when it is too large to count).
        seconds: u64,
    },
}

/// Parse `text` in `syntax` into whole seconds. The whole text is checked before the range, so
/// a malformed text is malformed however large its numbers; a number too large to count
/// saturates at `u64::MAX` and so is too long for any range short of that.
///
/// # Errors
/// [`DurationError::Malformed`] when the text is not in the syntax; [`DurationError::TooShort`]
/// or [`DurationError::TooLong`] outside its range.
pub fn parse_duration(text: &str, syntax: &DurationSyntax) -> Result<u64, DurationError> {
    if text.is_empty() {
        return Err(DurationError::Malformed);
    }
    let seconds = if syntax.bare_seconds && text.bytes().all(|b| b.is_ascii_digit()) {
        number(text)
    } else {
        sum_of_groups(text, syntax).ok_or(DurationError::Malformed)?
    };
    syntax.check(seconds)
}

/// The saturating sum of the `<number><unit>` groups of `text`, or `None` when any part of it is
/// outside the syntax (a foreign character or unit, a unit without a number, a number without a
/// unit, or a unit out of order where the syntax wants them descending).
fn sum_of_groups(text: &str, syntax: &DurationSyntax) -> Option<u64> {
    let mut total: u64 = 0;
    let mut previous: Option<u64> = None;
    let mut rest = text;
    while !rest.is_empty() {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        let letter = rest[digits..].chars().next()?;
        if digits == 0 {
            return None;
        }
        let unit = syntax
            .units
            .iter()
            .find(|u| u.letter() == letter)?
            .seconds();
        // Strictly smaller than the last unit: each unit once, largest first.
        if syntax.descending && previous.is_some_and(|last| unit >= last) {
            return None;
        }
        previous = Some(unit);
        total = total.saturating_add(number(&rest[..digits]).saturating_mul(unit));
        // Every unit letter is one ASCII byte.
        rest = &rest[digits + 1..];
    }
    Some(total)
}

/// A span of whole seconds as people read it, in the units of the flags: the two largest units,
/// truncated, and a zero second unit dropped (`0s`, `45s`, `5m10s`, `1h`, `1h1m`, `2d4h`, as
/// `kubectl` writes an age). A negative span is `0s`.
pub fn render_span(seconds: i64) -> String {
    let mut rest = u64::try_from(seconds).unwrap_or(0);
    let largest = rest.max(1);
    let mut written = String::new();
    for unit in Unit::ALL
        .iter()
        .skip_while(|u| u.seconds() > largest)
        .take(2)
    {
        let n = rest / unit.seconds();
        rest %= unit.seconds();
        if n > 0 || written.is_empty() {
            written.push_str(&format!("{n}{}", unit.letter()));
        }
    }
    written
}

/// ASCII digits as a number, saturating at `u64::MAX`.
fn number(digits: &str) -> u64 {
    digits.bytes().fold(0_u64, |acc, b| {
        acc.saturating_mul(10).saturating_add(u64::from(b - b'0'))
    })
}

#[cfg(test)]
mod tests;
