//! Unit tests of quantities: every row is what kube-apiserver v1.20.2 answered for the quantity
//! (a pod's `ephemeral-storage` request, or an extended resource's limit for the `%#v` dump),
//! recorded by `apiserver-sim/tests/differential/pod_fields.rs`. Pure; no I/O.

use std::cmp::Ordering;

use proptest::prelude::*;

use super::{Quantity, QuantityError};

/// The quantity as a created pod carries it: parsed, rounded up to milli, written.
fn stored(text: &str) -> String {
    let mut q = Quantity::parse(text).expect(text);
    q.round_up_to_milli();
    q.to_canonical()
}

/// The apiserver returns a created pod's quantities in canonical form, keeping an input that
/// already was one verbatim (`1.`, `+1`, `1e3`), and rounds every value up to milli.
#[test]
fn created_pods_carry_the_apiservers_canonical_form() {
    for (input, real) in [
        ("0", "0"),
        ("-0", "0"),
        ("0.5", "500m"),
        ("500m", "500m"),
        ("1500m", "1500m"),
        ("1.5", "1500m"),
        ("2000m", "2"),
        ("1000", "1k"),
        ("1000k", "1M"),
        ("1k", "1k"),
        ("1e3", "1e3"),
        ("1E3", "1E3"),
        ("1e-3", "1e-3"),
        ("1.5e3", "1500"),
        ("1024Mi", "1Gi"),
        ("1536Mi", "1536Mi"),
        ("1.5Gi", "1536Mi"),
        ("0.5Gi", "512Mi"),
        ("8Gi", "8Gi"),
        ("7Gi", "7Gi"),
        ("1000Mi", "1000Mi"),
        ("1023", "1023"),
        ("1024", "1024"),
        ("2048", "2048"),
        ("2049Ki", "2049Ki"),
        ("1Ki", "1Ki"),
        ("1.0", "1"),
        ("0.1n", "1m"),
        ("1n", "1m"),
        ("1.0000000001", "1001m"),
        ("1000E", "1"),
        ("1e21", "1e21"),
        ("12345678901234567890", "12345678901234567890"),
        (
            "123456789012345678901234567890",
            "123456789012345678901234567890",
        ),
        ("1.", "1."),
        (".5", "500m"),
        ("+1", "+1"),
        ("-", "0"),
        (".", "0"),
        (" 1 ", "1"),
        ("100u", "1m"),
        ("1200u", "2m"),
        ("0.000001", "1m"),
        ("-1Gi", "-1Gi"),
    ] {
        assert_eq!(stored(input), real, "{input}");
    }
}

/// The decoder's refusals, with apimachinery's words (the apiserver answers them 400).
#[test]
fn malformed_quantities_are_refused_as_the_decoder_refuses_them() {
    for (input, error) in [
        ("1e", QuantityError::Suffix),
        ("1Gb", QuantityError::Format),
        ("abc", QuantityError::Format),
        ("1.5.5", QuantityError::Format),
        ("", QuantityError::Format),
    ] {
        assert_eq!(Quantity::parse(input), Err(error), "{input}");
    }
    assert_eq!(
        QuantityError::Suffix.message(),
        "unable to parse quantity's suffix"
    );
    assert_eq!(
        QuantityError::Format.message(),
        "quantities must match the regular expression \
         '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
    );
}

/// A 422 `must be an integer` quotes the apiserver's `resource.Quantity` with Go's `%#v`: the
/// int64 amount after the milli rounding, and the input only when it was kept as canonical.
#[test]
fn the_go_dump_is_the_apiservers() {
    let dump = |value: i64, scale: i32, s: &str, format: &str| {
        format!(
            "resource.Quantity{{i:resource.int64Amount{{value:{value}, scale:{scale}}}, \
             d:resource.infDecAmount{{Dec:(*inf.Dec)(nil)}}, s:\"{s}\", Format:\"{format}\"}}"
        )
    };
    for (input, real) in [
        ("0.5", dump(5, -1, "", "DecimalSI")),
        ("500m", dump(500, -3, "500m", "DecimalSI")),
        ("1.5", dump(15, -1, "", "DecimalSI")),
        ("1500m", dump(1500, -3, "1500m", "DecimalSI")),
        ("1.0001", dump(1001, -3, "", "DecimalSI")),
        ("1e-1", dump(1, -1, "", "DecimalExponent")),
        ("-0.5", dump(-5, -1, "", "DecimalSI")),
    ] {
        let mut q = Quantity::parse(input).expect(input);
        q.round_up_to_milli();
        assert_eq!(q.go_dump(), real, "{input}");
    }
}

/// Extended resources must be whole (after the milli rounding); `2.5k`, `0.5Gi` and `1.0` are.
#[test]
fn whole_values() {
    for whole in ["1", "2.5k", "0.5Gi", "1.0", "0", "1e3", "-2"] {
        let mut q = Quantity::parse(whole).expect(whole);
        q.round_up_to_milli();
        assert!(q.is_whole(), "{whole}");
    }
    for fraction in ["0.5", "500m", "1.0001", "1e-1", "1n", "-0.5"] {
        let mut q = Quantity::parse(fraction).expect(fraction);
        q.round_up_to_milli();
        assert!(!q.is_whole(), "{fraction}");
    }
}

/// Values compare as numbers whatever their spelling and sign.
#[test]
fn values_compare_as_numbers() {
    let q = |s: &str| Quantity::parse(s).expect(s);
    assert_eq!(q("1Gi").cmp_value(&q("1024Mi")), Ordering::Equal);
    assert_eq!(q("1.5").cmp_value(&q("2")), Ordering::Less);
    assert_eq!(q("2Gi").cmp_value(&q("1G")), Ordering::Greater);
    assert_eq!(q("1000").cmp_value(&q("999")), Ordering::Greater);
    assert_eq!(q("-1").cmp_value(&q("-2")), Ordering::Greater);
    assert_eq!(q("-1").cmp_value(&q("0")), Ordering::Less);
    assert_eq!(q("0").cmp_value(&q("-0")), Ordering::Equal);
    assert!(q("-1Gi").is_negative());
    assert!(!q("-0").is_negative());
}

proptest! {
    /// The canonical form is a fixed point and keeps the value (for values whose SI exponent
    /// has a suffix, which is every value apiary's flags write).
    #[test]
    fn canonical_form_is_a_fixed_point(
        whole in 0u32..1_000_000,
        fraction in proptest::option::of("[0-9]{1,3}"),
        suffix in prop::sample::select(vec!["", "m", "k", "M", "G", "Ki", "Mi", "Gi", "e3"]),
        negative in any::<bool>(),
    ) {
        let sign = if negative { "-" } else { "" };
        let text = match fraction {
            Some(f) => format!("{sign}{whole}.{f}{suffix}"),
            None => format!("{sign}{whole}{suffix}"),
        };
        let mut q = Quantity::parse(&text).expect("well-formed");
        q.round_up_to_milli();
        let canonical = q.to_canonical();
        let mut again = Quantity::parse(&canonical).expect("canonical parses");
        again.round_up_to_milli();
        prop_assert_eq!(again.cmp_value(&q), Ordering::Equal, "{} -> {}", text, canonical);
        prop_assert_eq!(again.to_canonical(), canonical);
    }
}
