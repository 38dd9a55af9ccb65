//! The one source of randomness of the buzz binding: the generation placeholder of the
//! environment (buzz-provider.md § 2.4, step 3) and the namespace default of the `info` schema
//! (§ 3.3). Everything else in the crate is deterministic.
//!
//! Layer: a seam. [`OsEntropy`] asks the operating system's RNG; tests pass a fixed sequence.
//! Must not: be used for anything a decision depends on.

use std::fmt;

/// The operating system's RNG could not be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the operating system's random number generator failed: {0}")]
pub struct EntropyError(pub String);

/// A source of random 32-bit values.
pub trait Entropy {
    /// The next random value.
    ///
    /// # Errors
    ///
    /// [`EntropyError`] when no randomness is available.
    fn next_u32(&mut self) -> Result<u32, EntropyError>;
}

/// The operating system's RNG (`getrandom`).
#[derive(Clone, Copy, Debug, Default)]
pub struct OsEntropy;

impl Entropy for OsEntropy {
    fn next_u32(&mut self) -> Result<u32, EntropyError> {
        getrandom::u32().map_err(|error| EntropyError(error.to_string()))
    }
}

/// A fixed sequence, repeated (tests and reproducible examples).
#[derive(Clone)]
pub struct FixedEntropy {
    values: Vec<u32>,
    next: usize,
}

impl FixedEntropy {
    /// Yields `values` in order, then again from the start; an empty list yields zeros.
    pub fn new(values: impl Into<Vec<u32>>) -> Self {
        FixedEntropy {
            values: values.into(),
            next: 0,
        }
    }
}

impl fmt::Debug for FixedEntropy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FixedEntropy")
            .field("len", &self.values.len())
            .finish_non_exhaustive()
    }
}

impl Entropy for FixedEntropy {
    fn next_u32(&mut self) -> Result<u32, EntropyError> {
        let Some(&value) = self.values.get(self.next % self.values.len().max(1)) else {
            return Ok(0);
        };
        self.next += 1;
        Ok(value)
    }
}

/// A fresh generation placeholder: 8 lowercase hex characters of one random `u32`
/// (buzz-provider.md § 4.2, generation token). The reconciler restamps the real one per attempt.
///
/// # Errors
///
/// [`EntropyError`] when no randomness is available.
pub fn generation_placeholder(entropy: &mut dyn Entropy) -> Result<String, EntropyError> {
    Ok(format!("{:08x}", entropy.next_u32()?))
}

#[cfg(test)]
mod tests {
    //! The fixed source and the placeholder's shape.

    use super::*;

    /// The placeholder is `{:08x}`: zero-padded, lowercase.
    #[test]
    fn placeholder_is_eight_lowercase_hex() {
        let mut fixed = FixedEntropy::new([0x0a1b_2c3d, 0xABCD_EF01]);
        assert_eq!(generation_placeholder(&mut fixed).unwrap(), "0a1b2c3d");
        assert_eq!(generation_placeholder(&mut fixed).unwrap(), "abcdef01");
        assert_eq!(generation_placeholder(&mut fixed).unwrap(), "0a1b2c3d");
    }

    /// The OS source answers (a smoke test of the seam, not of randomness).
    #[test]
    fn os_entropy_answers() {
        assert!(OsEntropy.next_u32().is_ok());
    }

    /// An empty fixed source yields zeros instead of panicking.
    #[test]
    fn empty_fixed_source_yields_zero() {
        assert_eq!(FixedEntropy::new(Vec::new()).next_u32().unwrap(), 0);
    }
}
