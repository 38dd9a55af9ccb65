//! Identity derivation of the buzz binding (buzz-provider.md § 4.1): the agent's `nsec1…`
//! secret key, trimmed and bech32-decoded (`bech32`), gives the secp256k1 x-only public key
//! (`k256`) in lowercase hex, from which every name, label and comparison is derived.
//!
//! Pure. Must not: print, keep or return the secret key (the [`Pubkey`] holds only the public
//! half), or accept a caller-supplied pubkey in place of the derived one.

use bech32::primitives::decode::CheckedHrpstring;
use bech32::{Bech32, Hrp};
use k256::elliptic_curve::sec1::ToEncodedPoint;

/// The one refusal, whatever was wrong with the key (its text never echoes the input).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("private_key_nsec is not a decodable nsec1 key")]
pub struct IdentityError;

/// The agent's public key: exactly 64 lowercase hex characters (32-byte x-only secp256k1).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Pubkey(String);

impl Pubkey {
    /// The 64 hex characters.
    pub fn as_hex(&self) -> &str {
        &self.0
    }
}

/// Derive the public key from `private_key_nsec` (trimmed first).
///
/// # Errors
///
/// [`IdentityError`] when the text is not bech32 with the `nsec` prefix, its payload is not 32
/// bytes, or those bytes are not a valid secp256k1 secret key (zero, or not below the order).
pub fn derive(private_key_nsec: &str) -> Result<Pubkey, IdentityError> {
    let text = private_key_nsec.trim();
    // NIP-19 keys use the original bech32 checksum (not bech32m).
    let checked = CheckedHrpstring::new::<Bech32>(text).map_err(|_| IdentityError)?;
    if checked.hrp() != Hrp::parse_unchecked("nsec") {
        return Err(IdentityError);
    }
    let bytes: Vec<u8> = checked.byte_iter().collect();
    let secret = k256::SecretKey::from_slice(&bytes).map_err(|_| IdentityError)?;
    if bytes.len() != 32 {
        return Err(IdentityError);
    }
    let point = secret.public_key().to_encoded_point(true);
    let x = point.x().ok_or(IdentityError)?;
    Ok(Pubkey(x.iter().map(|b| format!("{b:02x}")).collect()))
}

#[cfg(test)]
mod tests {
    //! The fixture key of buzz-provider.md § 2.5 and the malformed examples of § 4.1.

    use super::*;

    const FIXTURE_NSEC: &str = "nsec1vl029mgpspedva04g90vltkh6fvh240zqtv9k0t9af8935ke9laqsnlfe5";

    /// The NIP-19 test key derives the spec's pubkey (and so the fixture pod name).
    #[test]
    fn fixture_nsec_derives_the_spec_pubkey() {
        let pubkey = derive(FIXTURE_NSEC).expect("decodes");
        assert_eq!(
            pubkey.as_hex(),
            "7e7e9c42a91bfef19fa929e5fda1b72e0ebc1a4c1141673e2794234d86addf4e"
        );
    }

    /// The key is trimmed before decoding.
    #[test]
    fn nsec_is_trimmed() {
        assert_eq!(
            derive(&format!("  {FIXTURE_NSEC}\n")).unwrap(),
            derive(FIXTURE_NSEC).unwrap()
        );
    }

    /// Malformed keys (`""`, `nsec1`, `not-a-key`, an `npub1…`, a bad checksum) all give the one
    /// message, which never echoes the input.
    #[test]
    fn malformed_keys_are_refused_with_one_message() {
        let npub = "npub10elfcs4fr0l0r8af98jlmgdh9c8tcxjvz9qkw038js35mp4dma8qzvjptg";
        let bad_checksum = FIXTURE_NSEC.replace("fe5", "fe6");
        for input in ["", "nsec1", "not-a-key", npub, &bad_checksum] {
            let error = derive(input).expect_err("refused");
            assert_eq!(
                error.to_string(),
                "private_key_nsec is not a decodable nsec1 key"
            );
        }
    }

    /// A bech32m checksum over the same payload is not a NIP-19 key.
    #[test]
    fn bech32m_is_refused() {
        let (hrp, data) = bech32::decode(FIXTURE_NSEC).expect("bech32");
        let m = bech32::encode::<bech32::Bech32m>(hrp, &data).expect("encode");
        assert!(derive(&m).is_err());
    }

    /// A 32-byte payload of zeros is not a secret key, and a short payload is refused.
    #[test]
    fn invalid_scalars_and_lengths_are_refused() {
        let hrp = Hrp::parse("nsec").unwrap();
        let zero = bech32::encode::<Bech32>(hrp, &[0u8; 32]).unwrap();
        let short = bech32::encode::<Bech32>(hrp, &[1u8; 31]).unwrap();
        let long = bech32::encode::<Bech32>(hrp, &[1u8; 33]).unwrap();
        for input in [zero, short, long] {
            assert!(derive(&input).is_err(), "{input}");
        }
    }
}
