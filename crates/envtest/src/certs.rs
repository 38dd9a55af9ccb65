//! The key material a throw-away control plane needs, generated with `rcgen` (ECDSA P-256, ring):
//! a CA, a serving certificate it signs for `127.0.0.1`/`localhost`, and the service-account
//! signing key pair.
//!
//! Layer: test support. Generates PEM text in memory; writing it to disk is the caller's job. It
//! must not be used for anything but a loopback test server.

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose, SanType,
};

/// PEM text of everything the apiserver and its clients need.
#[derive(Clone)]
pub struct Certificates {
    /// The CA certificate clients trust (`certificate-authority-data`).
    pub ca_pem: String,
    /// The same CA certificate in DER (what `kube::Config::root_cert` and rustls take).
    pub ca_der: Vec<u8>,
    /// The apiserver's serving certificate (`--tls-cert-file`), signed by the CA.
    pub serving_cert_pem: String,
    /// The serving certificate's private key (`--tls-private-key-file`), PKCS#8.
    pub serving_key_pem: String,
    /// The service-account public key (`--service-account-key-file`), SubjectPublicKeyInfo.
    pub service_account_public_pem: String,
    /// The service-account signing key (`--service-account-signing-key-file`), PKCS#8.
    pub service_account_private_pem: String,
}

impl std::fmt::Debug for Certificates {
    /// Shows only the public halves: private keys never reach a log line.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Certificates")
            .field("ca_pem", &self.ca_pem)
            .field("serving_cert_pem", &self.serving_cert_pem)
            .field(
                "service_account_public_pem",
                &self.service_account_public_pem,
            )
            .finish_non_exhaustive()
    }
}

impl Certificates {
    /// Generates a fresh CA, a serving certificate for `127.0.0.1` and `localhost`, and a
    /// service-account key pair.
    ///
    /// # Errors
    /// Fails only if `rcgen` cannot generate a key or sign a certificate.
    pub fn generate() -> Result<Self, rcgen::Error> {
        let ca_key = KeyPair::generate()?;
        let mut ca_params = CertificateParams::new(Vec::<String>::new())?;
        ca_params
            .distinguished_name
            .push(DnType::CommonName, "apiary-envtest CA");
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let ca_cert = ca_params.self_signed(&ca_key)?;
        let issuer = Issuer::new(ca_params, ca_key);

        let serving_key = KeyPair::generate()?;
        let mut serving_params = CertificateParams::new(vec!["localhost".to_owned()])?;
        serving_params
            .subject_alt_names
            .push(SanType::IpAddress(std::net::Ipv4Addr::LOCALHOST.into()));
        serving_params
            .distinguished_name
            .push(DnType::CommonName, "kube-apiserver");
        serving_params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        serving_params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        serving_params.use_authority_key_identifier_extension = true;
        let serving_cert = serving_params.signed_by(&serving_key, &issuer)?;

        let service_account_key = KeyPair::generate()?;
        Ok(Self {
            ca_pem: ca_cert.pem(),
            ca_der: ca_cert.der().to_vec(),
            serving_cert_pem: serving_cert.pem(),
            serving_key_pem: serving_key.serialize_pem(),
            service_account_public_pem: service_account_key.public_key_pem(),
            service_account_private_pem: service_account_key.serialize_pem(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each part is PEM of the kind the apiserver's flags expect.
    #[test]
    fn generates_pem_of_the_expected_kinds() {
        let certs = Certificates::generate().unwrap();
        assert!(certs.ca_pem.starts_with("-----BEGIN CERTIFICATE-----"));
        assert!(
            certs
                .serving_cert_pem
                .starts_with("-----BEGIN CERTIFICATE-----")
        );
        assert!(
            certs
                .serving_key_pem
                .starts_with("-----BEGIN PRIVATE KEY-----")
        );
        assert!(
            certs
                .service_account_public_pem
                .starts_with("-----BEGIN PUBLIC KEY-----")
        );
        assert!(
            certs
                .service_account_private_pem
                .starts_with("-----BEGIN PRIVATE KEY-----")
        );
        assert_ne!(certs.serving_key_pem, certs.service_account_private_pem);
    }

    /// `Debug` never shows a private key.
    #[test]
    fn debug_hides_private_keys() {
        let certs = Certificates::generate().unwrap();
        let shown = format!("{certs:?}");
        assert!(!shown.contains("PRIVATE KEY"), "{shown}");
    }
}
