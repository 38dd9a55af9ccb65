//! Resource quantities as the apiserver (apimachinery's `resource.Quantity`, v1.20) reads,
//! rounds, compares and writes them: the parse with its fast path (an int64 amount) and its
//! canonical-input cache, the rounding of every `ResourceList` up to milli scale, the canonical
//! form a created pod is returned with (`1024Mi` → `1Gi`, `0.5` → `500m`), and the Go `%#v`
//! dump a 422 `must be an integer` message quotes.
//!
//! Layer: part of the pure model; plain values and pure functions. Performs no I/O.
//!
//! The value is held exactly as `mantissa × 10^exponent` in an `i128`, which covers every
//! quantity of up to 38 significant digits; a longer one (which the apiserver would hold in a
//! big decimal) is refused as not numeric (cluster-model README § Pod validation against the
//! real apiserver).

use std::cmp::Ordering;

/// How a quantity is written: the suffix family its input used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Format {
    /// `Ki`, `Mi`, … `Ei`.
    BinarySi,
    /// `n`, `u`, `m`, none, `k`, `M`, … `E`.
    DecimalSi,
    /// `e<n>` / `E<n>`.
    DecimalExponent,
}

impl Format {
    fn go_name(self) -> &'static str {
        match self {
            Self::BinarySi => "BinarySI",
            Self::DecimalSi => "DecimalSI",
            Self::DecimalExponent => "DecimalExponent",
        }
    }
}

/// Why a quantity string is refused while the apiserver decodes it (a 400 naming no field).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum QuantityError {
    /// Not of the shape `^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$`.
    Format,
    /// The number does not parse (or, in the model, has more than 38 significant digits).
    Numeric,
    /// The suffix is not one of the known ones.
    Suffix,
}

impl QuantityError {
    /// apimachinery's error text.
    pub(crate) fn message(self) -> &'static str {
        match self {
            Self::Format => {
                "quantities must match the regular expression \
                 '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
            }
            Self::Numeric => "unable to parse numeric part of quantity",
            Self::Suffix => "unable to parse quantity's suffix",
        }
    }
}

/// A parsed quantity: its exact value, its format, and how the apiserver holds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Quantity {
    /// The value is `mantissa × 10^exponent`.
    mantissa: i128,
    exponent: i32,
    format: Format,
    /// The apiserver's int64 amount `(value, scale)` when its fast path held the value, else
    /// `None` (a big decimal).
    int64: Option<(i64, i32)>,
    /// The input, kept by the apiserver as the canonical form when it already was one.
    cached: Option<String>,
}

/// The parts of a quantity string (apimachinery's `parseQuantityString`).
struct Parts<'a> {
    positive: bool,
    num: &'a str,
    denom: &'a str,
    suffix: &'a str,
}

fn split(s: &str) -> Result<Parts<'_>, QuantityError> {
    let b = s.as_bytes();
    let end = b.len();
    let mut pos = 0;
    let mut positive = true;
    match b.first() {
        Some(b'-') => {
            positive = false;
            pos += 1;
        }
        Some(b'+') => pos += 1,
        _ => {}
    }
    while pos < end && b[pos] == b'0' {
        pos += 1;
    }
    let zero = Parts {
        positive,
        num: "0",
        denom: "",
        suffix: "",
    };
    if pos >= end {
        return Ok(zero);
    }
    let start = pos;
    while pos < end && b[pos].is_ascii_digit() {
        pos += 1;
    }
    let num = match &s[start..pos] {
        "" => "0",
        digits => digits,
    };
    let mut parts = Parts { num, ..zero };
    if pos >= end {
        return Ok(parts);
    }
    if b[pos] == b'.' {
        pos += 1;
        let start = pos;
        while pos < end && b[pos].is_ascii_digit() {
            pos += 1;
        }
        parts.denom = &s[start..pos];
    }
    let suffix_start = pos;
    while pos < end && b"eEinumkKMGTP".contains(&b[pos]) {
        pos += 1;
    }
    if pos < end && matches!(b[pos], b'-' | b'+') {
        pos += 1;
    }
    while pos < end && b[pos].is_ascii_digit() {
        pos += 1;
    }
    if pos < end {
        return Err(QuantityError::Format);
    }
    parts.suffix = &s[suffix_start..];
    Ok(parts)
}

/// `(base, exponent, format)` of a suffix (apimachinery's `quantitySuffixer.interpret`).
fn interpret(suffix: &str) -> Option<(u32, i32, Format)> {
    const DECIMAL: [(&str, i32); 10] = [
        ("n", -9),
        ("u", -6),
        ("m", -3),
        ("", 0),
        ("k", 3),
        ("M", 6),
        ("G", 9),
        ("T", 12),
        ("P", 15),
        ("E", 18),
    ];
    const BINARY: [(&str, i32); 6] = [
        ("Ki", 10),
        ("Mi", 20),
        ("Gi", 30),
        ("Ti", 40),
        ("Pi", 50),
        ("Ei", 60),
    ];
    if let Some((_, e)) = DECIMAL.iter().find(|(s, _)| *s == suffix) {
        return Some((10, *e, Format::DecimalSi));
    }
    if let Some((_, e)) = BINARY.iter().find(|(s, _)| *s == suffix) {
        return Some((2, *e, Format::BinarySi));
    }
    let rest = suffix.strip_prefix(['e', 'E'])?;
    // Go's ParseInt accepts a sign; the exponent is then truncated to 32 bits.
    let parsed: i64 = rest.parse().ok()?;
    #[allow(clippy::cast_possible_truncation)] // reason: Go's int32(parsed), as the apiserver does.
    Some((10, parsed as i32, Format::DecimalExponent))
}

/// `value / 10^times`, rounded away from zero (apimachinery's `negativeScaleInt64`).
fn divide_away(value: i128, times: u32) -> i128 {
    let Some(divisor) = 10i128.checked_pow(times) else {
        return value.signum();
    };
    let (q, r) = (value / divisor, value % divisor);
    if r == 0 { q } else { q + value.signum() }
}

/// Removes every factor `base` from `value`: `(rest, times)`.
fn remove_factors(mut value: i128, base: i128) -> (i128, i32) {
    let mut times = 0;
    while value != 0 && value % base == 0 {
        value /= base;
        times += 1;
    }
    (value, times)
}

/// Go's `%q` of a string (what `strconv.Quote` writes) for the characters a quantity or a
/// name can hold.
pub(crate) fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

impl Quantity {
    /// Parses `text` as the apiserver's JSON decoder does (surrounding spaces trimmed).
    ///
    /// # Errors
    /// The apimachinery error the apiserver's decoder reports.
    pub(crate) fn parse(text: &str) -> Result<Self, QuantityError> {
        let text = text.trim();
        if text.is_empty() {
            return Err(QuantityError::Format);
        }
        if text == "0" {
            return Ok(Self {
                mantissa: 0,
                exponent: 0,
                format: Format::DecimalSi,
                int64: Some((0, 0)),
                cached: Some(text.to_owned()),
            });
        }
        let parts = split(text)?;
        let (base, exponent, format) = interpret(parts.suffix).ok_or(QuantityError::Suffix)?;
        let digits = parts.num.len() + parts.denom.len();
        let denom_len = i32::try_from(parts.denom.len()).map_err(|_| QuantityError::Numeric)?;
        let shifted = format!("{}{}", parts.num, parts.denom);
        if let Some(quantity) = Self::fast_path(&parts, &shifted, exponent, format, text) {
            return Ok(quantity);
        }
        // The big-decimal path: exact, then rounded up (away from zero) to nano.
        if digits > 38 {
            return Err(QuantityError::Numeric);
        }
        let mut mantissa: i128 = shifted.parse().map_err(|_| QuantityError::Numeric)?;
        let mut scale = -denom_len;
        if base == 10 {
            scale = scale.saturating_add(exponent);
        } else {
            let factor = 2i128
                .checked_pow(exponent.unsigned_abs())
                .ok_or(QuantityError::Numeric)?;
            mantissa = mantissa.checked_mul(factor).ok_or(QuantityError::Numeric)?;
        }
        if mantissa != 0 && scale < -9 {
            mantissa = divide_away(mantissa, (-9 - scale).unsigned_abs());
            scale = -9;
        }
        let mut format = format;
        if format == Format::BinarySi {
            let max = Self::exact(i128::from(i64::MAX), 0);
            let magnitude = Self::exact(mantissa, scale);
            if magnitude.cmp_value(&max) == Ordering::Greater {
                (mantissa, scale) = (i128::from(i64::MAX), 0);
            } else if magnitude.cmp_value(&Self::exact(1, 0)) == Ordering::Less && mantissa != 0 {
                format = Format::DecimalSi;
            }
        }
        if !parts.positive {
            mantissa = -mantissa;
        }
        Ok(Self {
            mantissa,
            exponent: scale,
            format,
            int64: None,
            cached: None,
        })
    }

    /// The apiserver's int64 fast path, when it applies.
    fn fast_path(
        parts: &Parts<'_>,
        shifted: &str,
        exponent: i32,
        format: Format,
        text: &str,
    ) -> Option<Self> {
        let digits = i32::try_from(parts.num.len() + parts.denom.len()).ok()?;
        let (mut scale, precision, multiplier) = match format {
            Format::BinarySi if exponent >= 0 && parts.denom.is_empty() => {
                let num_len = i32::try_from(parts.num.len()).ok()?;
                #[allow(clippy::cast_possible_truncation, clippy::cast_precision_loss)]
                // reason: Go's int32(float32(exponent)*3/10), as the apiserver computes it.
                let binary_digits = (exponent as f32 * 3.0 / 10.0) as i32;
                (0, 15 - num_len - binary_digits - 1, 1i64 << exponent)
            }
            Format::BinarySi => return None,
            _ => (exponent, 18 - digits, 1),
        };
        if precision < 0 {
            return None;
        }
        scale = scale.checked_sub(i32::try_from(parts.denom.len()).ok()?)?;
        if scale < -9 {
            return None;
        }
        let value: i64 = shifted.parse().ok()?;
        let mut result = value.checked_mul(multiplier)?;
        if !parts.positive {
            result = -result;
        }
        let canonical = match format {
            Format::BinarySi => exponent % 10 == 0 && value & 0x07 != 0,
            _ => scale % 3 == 0 && !shifted.ends_with("000") && !shifted.starts_with('0'),
        };
        Some(Self {
            mantissa: i128::from(result),
            exponent: scale,
            format,
            int64: Some((result, scale)),
            cached: canonical.then(|| text.to_owned()),
        })
    }

    fn exact(mantissa: i128, exponent: i32) -> Self {
        Self {
            mantissa,
            exponent,
            format: Format::DecimalSi,
            int64: None,
            cached: None,
        }
    }

    /// What the apiserver's defaulting does to every `ResourceList` value: rounds it up (away
    /// from zero) to milli scale, forgetting the cached input when that changes the scale.
    pub(crate) fn round_up_to_milli(&mut self) {
        if self.exponent >= -3 {
            return;
        }
        self.mantissa = divide_away(self.mantissa, (-3 - self.exponent).unsigned_abs());
        self.exponent = -3;
        self.cached = None;
        if self.int64.is_some() {
            self.int64 = i64::try_from(self.mantissa).ok().map(|v| (v, -3));
        }
    }

    /// Whether the value is below zero.
    pub(crate) fn is_negative(&self) -> bool {
        self.mantissa < 0
    }

    /// Whether the value, rounded away from zero to milli scale, is whole (the apiserver's
    /// `MilliValue() % 1000 == 0`).
    pub(crate) fn is_whole(&self) -> bool {
        if self.exponent >= 0 {
            return true;
        }
        if self.exponent >= -3 {
            // milli = mantissa × 10^(exponent + 3): a multiple of 1000 exactly when the
            // mantissa is a multiple of 10^-exponent.
            return self.mantissa % 10i128.pow(self.exponent.unsigned_abs()) == 0;
        }
        divide_away(self.mantissa, (-3 - self.exponent).unsigned_abs()) % 1000 == 0
    }

    /// The decimal digits of the magnitude without trailing zeros, and the power of ten of
    /// its last digit.
    fn digits(&self) -> (String, i64) {
        let (rest, times) = remove_factors(self.mantissa.abs(), 10);
        (
            rest.to_string(),
            i64::from(self.exponent) + i64::from(times),
        )
    }

    /// Compares the values (not their spellings).
    pub(crate) fn cmp_value(&self, other: &Self) -> Ordering {
        let sign = |q: &Self| q.mantissa.signum();
        match sign(self).cmp(&sign(other)) {
            Ordering::Equal if sign(self) == 0 => Ordering::Equal,
            Ordering::Equal => {
                let magnitude = self.cmp_magnitude(other);
                if sign(self) < 0 {
                    magnitude.reverse()
                } else {
                    magnitude
                }
            }
            unequal => unequal,
        }
    }

    fn cmp_magnitude(&self, other: &Self) -> Ordering {
        let (a, ae) = self.digits();
        let (b, be) = other.digits();
        let order = |d: &String, e: i64| i64::try_from(d.len()).unwrap_or(i64::MAX) + e;
        order(&a, ae).cmp(&order(&b, be)).then_with(|| {
            // Same order of magnitude: compare digit by digit, the shorter padded with zeros.
            let width = a.len().max(b.len());
            format!("{a:0<width$}").cmp(&format!("{b:0<width$}"))
        })
    }

    /// The string the apiserver writes for it (`Quantity.String()`): the cached input, else the
    /// canonical form.
    pub(crate) fn to_canonical(&self) -> String {
        if let Some(cached) = &self.cached {
            return cached.clone();
        }
        if self.mantissa == 0 {
            return "0".to_owned();
        }
        let mut format = self.format;
        if format == Format::BinarySi {
            let small = self.cmp_value(&Self::exact(-1024, 0)) == Ordering::Greater
                && self.cmp_value(&Self::exact(1024, 0)) == Ordering::Less;
            if small || !self.is_integer() {
                format = Format::DecimalSi;
            }
        }
        if format == Format::BinarySi {
            let whole = self.integer_value();
            let (amount, times) = remove_factors(whole, 1024);
            const SUFFIXES: [&str; 7] = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"];
            let suffix = usize::try_from(times)
                .ok()
                .and_then(|t| SUFFIXES.get(t))
                .copied()
                .unwrap_or("");
            return format!("{amount}{suffix}");
        }
        // Exponents wrap at 32 bits, as the apiserver's int32 scale does.
        let (amount, times) = remove_factors(self.mantissa, 10);
        let mut exponent = times.wrapping_add(self.exponent);
        // Zeros are appended as text: the widest mantissa times 100 would not fit an i128.
        let zeros = match exponent.rem_euclid(3) {
            1 => "0",
            2 => "00",
            _ => "",
        };
        exponent = exponent.wrapping_sub(i32::try_from(zeros.len()).unwrap_or(0));
        let suffix = match format {
            Format::DecimalExponent if exponent == 0 => String::new(),
            Format::DecimalExponent => format!("e{exponent}"),
            // An exponent without an SI suffix gets none, as in the apiserver (`1000E` → `1`).
            _ => match exponent {
                -9 => "n",
                -6 => "u",
                -3 => "m",
                3 => "k",
                6 => "M",
                9 => "G",
                12 => "T",
                15 => "P",
                18 => "E",
                _ => "",
            }
            .to_owned(),
        };
        format!("{amount}{zeros}{suffix}")
    }

    fn is_integer(&self) -> bool {
        self.exponent >= 0
            || self.mantissa == 0
            || 10i128
                .checked_pow(self.exponent.unsigned_abs())
                .is_some_and(|p| self.mantissa % p == 0)
    }

    /// The value as a whole number (only called when it is one).
    fn integer_value(&self) -> i128 {
        if self.exponent >= 0 {
            self.mantissa * 10i128.pow(self.exponent.unsigned_abs())
        } else {
            self.mantissa / 10i128.pow(self.exponent.unsigned_abs())
        }
    }

    /// The Go `%#v` of the apiserver's `resource.Quantity`, as a 422 quotes it for a value that
    /// must be an integer. A big decimal is a pointer there, whose address no model can know.
    pub(crate) fn go_dump(&self) -> String {
        let (value, scale, dec) = match self.int64 {
            Some((value, scale)) => (value, scale, "nil"),
            None => (0, 0, "0xc000000000"),
        };
        format!(
            "resource.Quantity{{i:resource.int64Amount{{value:{value}, scale:{scale}}}, \
             d:resource.infDecAmount{{Dec:(*inf.Dec)({dec})}}, s:{}, Format:{}}}",
            go_quote(self.cached.as_deref().unwrap_or("")),
            go_quote(self.format.go_name()),
        )
    }
}

#[cfg(test)]
mod tests;
