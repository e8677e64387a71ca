//! A cluster CA signing a client's certificate request, as Magnum's
//! `x509.operations.sign` does: the request's subject and public key, the CA's subject as
//! issuer, valid from a day ago for `TERM_OF_VALIDITY_DAYS`, no CA flag, and the
//! subject key identifier. Built on `rcgen` (certificate building and signing, pure Rust
//! on `ring`, already our TLS provider) and `x509-parser` (reading the CA certificate and
//! checking the request's own signature), so no system OpenSSL is needed.

use rcgen::{CertificateSigningRequestParams, IsCa, Issuer, KeyPair, SerialNumber};

use super::Refusal;
pub use crate::certificates::TERM_OF_VALIDITY_DAYS;

/// Why a request could not be signed.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SignError {
    /// The request is not a PEM certificate request with a valid signature.
    #[error("invalid certificate signing request")]
    InvalidCsr,
    /// The CA certificate or key cannot be used (the text says why; no key material).
    #[error("{0}")]
    BadCa(String),
}

/// A CA: its certificate and private key, both PEM.
pub struct CertificateAuthority<'a> {
    pub cert_pem: &'a str,
    pub key_pem: &'a str,
}

impl CertificateAuthority<'_> {
    /// [`Self::sign`] for `POST /v1/certificates` on cluster `cluster_uuid`: a bad request
    /// is Magnum's invalid-csr refusal, an unusable CA a generic one (why goes to the log).
    pub fn sign_for_cluster(&self, cluster_uuid: &str, csr_pem: &str) -> Result<String, Refusal> {
        self.sign(csr_pem).map_err(|e| match e {
            SignError::InvalidCsr => Refusal::InvalidCsr(csr_pem.to_string()),
            SignError::BadCa(why) => {
                tracing::warn!(
                    cluster = cluster_uuid,
                    "cannot sign with the cluster CA: {why}"
                );
                Refusal::CaCannotSign(cluster_uuid.into())
            }
        })
    }

    /// Signs `csr_pem` and returns the certificate as PEM.
    pub fn sign(&self, csr_pem: &str) -> Result<String, SignError> {
        let mut request = CertificateSigningRequestParams::from_pem(csr_pem)
            .map_err(|_| SignError::InvalidCsr)?;
        let key = signing_key(self.key_pem)?;
        let issuer = Issuer::from_ca_cert_pem(self.cert_pem, key)
            .map_err(|e| SignError::BadCa(format!("cannot read the CA certificate: {e}")))?;
        let p = &mut request.params;
        // Magnum's default `[x509] allow_ca = False`: a signed certificate is never a CA.
        p.is_ca = IsCa::ExplicitNoCa;
        let ymd = |d: chrono::NaiveDate| {
            use chrono::Datelike as _;
            rcgen::date_time_ymd(d.year(), d.month() as u8, d.day() as u8)
        };
        let today = chrono::Utc::now().date_naive();
        p.not_before = ymd(today - chrono::Duration::days(1));
        p.not_after = ymd(today + chrono::Duration::days(TERM_OF_VALIDITY_DAYS));
        p.serial_number = Some(SerialNumber::from_slice(uuid::Uuid::new_v4().as_bytes()));
        p.use_authority_key_identifier_extension = true;
        let cert = request
            .signed_by(&issuer)
            .map_err(|e| SignError::BadCa(format!("cannot sign with the CA: {e}")))?;
        Ok(cert.pem())
    }
}

/// The CA's private key: PKCS#8 (`PRIVATE KEY`) or PKCS#1 (`RSA PRIVATE KEY`, what
/// Cluster API and kubeadm write), RSA or ECDSA.
fn signing_key(pem: &str) -> Result<KeyPair, SignError> {
    let (_, block) = x509_parser::pem::parse_x509_pem(pem.as_bytes())
        .map_err(|_| SignError::BadCa("the CA key is not PEM".into()))?;
    let pkcs8 = match block.label.as_str() {
        "PRIVATE KEY" => block.contents,
        "RSA PRIVATE KEY" => rsa_pkcs1_to_pkcs8(&block.contents),
        other => {
            return Err(SignError::BadCa(format!(
                "unsupported CA key format {other:?} (expected PRIVATE KEY or RSA PRIVATE KEY)"
            )))
        }
    };
    KeyPair::try_from(pkcs8.as_slice())
        .map_err(|e| SignError::BadCa(format!("cannot load the CA key: {e}")))
}

/// Wraps a PKCS#1 RSAPrivateKey in a PKCS#8 PrivateKeyInfo:
/// `SEQUENCE { INTEGER 0, SEQUENCE { rsaEncryption, NULL }, OCTET STRING pkcs1 }`.
fn rsa_pkcs1_to_pkcs8(pkcs1: &[u8]) -> Vec<u8> {
    const VERSION_AND_ALGORITHM: [u8; 18] = [
        0x02, 0x01, 0x00, // INTEGER 0
        0x30, 0x0d, // SEQUENCE (13 bytes)
        0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01, // rsaEncryption
        0x05, 0x00, // NULL
    ];
    let mut key = vec![0x04];
    key.extend(der_length(pkcs1.len()));
    key.extend_from_slice(pkcs1);
    let body_len = VERSION_AND_ALGORITHM.len() + key.len();
    let mut out = vec![0x30];
    out.extend(der_length(body_len));
    out.extend_from_slice(&VERSION_AND_ALGORITHM);
    out.extend(key);
    out
}

fn der_length(len: usize) -> Vec<u8> {
    if len < 0x80 {
        return vec![len as u8];
    }
    let bytes: Vec<u8> = len
        .to_be_bytes()
        .into_iter()
        .skip_while(|b| *b == 0)
        .collect();
    let mut out = vec![0x80 | bytes.len() as u8];
    out.extend(bytes);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use rcgen::{CertificateParams, DistinguishedName, DnType, KeyUsagePurpose};
    use x509_parser::prelude::*;

    fn ca(key: &KeyPair, cn: &str) -> String {
        let mut p = CertificateParams::default();
        let mut dn = DistinguishedName::new();
        dn.push(DnType::CommonName, cn);
        p.distinguished_name = dn;
        p.is_ca = IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        p.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        p.self_signed(key).expect("self-signed CA").pem()
    }

    fn csr(cn: &str) -> String {
        let key = KeyPair::generate().expect("key");
        let mut p = CertificateParams::default();
        let mut dn = DistinguishedName::new();
        dn.push(DnType::CommonName, cn);
        dn.push(DnType::OrganizationName, "system:masters");
        p.distinguished_name = dn;
        p.serialize_request(&key).expect("csr").pem().expect("pem")
    }

    fn der_of(pem: &str) -> Vec<u8> {
        x509_parser::pem::parse_x509_pem(pem.as_bytes())
            .expect("pem")
            .1
            .contents
    }

    #[test]
    fn a_signed_certificate_verifies_against_the_ca_and_keeps_the_subject() {
        let key = KeyPair::generate().expect("key");
        let ca_pem = ca(&key, "kubernetes");
        let ca = CertificateAuthority {
            cert_pem: &ca_pem,
            key_pem: &key.serialize_pem(),
        };
        let signed = ca.sign(&csr("admin")).expect("signed");
        let ca_der = der_of(&ca_pem);
        let (_, ca_cert) = X509Certificate::from_der(&ca_der).expect("ca");
        let der = der_of(&signed);
        let (_, cert) = X509Certificate::from_der(&der).expect("cert");
        cert.verify_signature(Some(ca_cert.public_key()))
            .expect("verifies with the CA key");
        assert_eq!(cert.issuer(), ca_cert.subject());
        assert_eq!(cert.subject().to_string(), "CN=admin, O=system:masters");
        assert!(!cert.is_ca());
        let days = (cert.validity().not_after.timestamp() - cert.validity().not_before.timestamp())
            / 86_400;
        assert_eq!(days, TERM_OF_VALIDITY_DAYS + 1);
    }

    #[test]
    fn a_cluster_api_rsa_ca_with_a_pkcs1_key_signs() {
        let ca_pem = include_str!("../../tests/fixtures/capi-ca/tls.crt");
        let ca = CertificateAuthority {
            cert_pem: ca_pem,
            key_pem: include_str!("../../tests/fixtures/capi-ca/tls.key"),
        };
        let signed = ca.sign(&csr("admin")).expect("signed");
        let ca_der = der_of(ca_pem);
        let (_, ca_cert) = X509Certificate::from_der(&ca_der).expect("ca");
        let der = der_of(&signed);
        let (_, cert) = X509Certificate::from_der(&der).expect("cert");
        cert.verify_signature(Some(ca_cert.public_key()))
            .expect("verifies with the CA key");
        assert_eq!(cert.issuer().to_string(), "CN=kubernetes");
    }

    #[test]
    fn garbage_is_an_invalid_csr() {
        let key = KeyPair::generate().expect("key");
        let ca_pem = ca(&key, "kubernetes");
        let ca = CertificateAuthority {
            cert_pem: &ca_pem,
            key_pem: &key.serialize_pem(),
        };
        assert_eq!(ca.sign("not a csr"), Err(SignError::InvalidCsr));
    }

    #[test]
    fn a_pkcs1_header_is_wrapped_with_der_lengths() {
        assert_eq!(der_length(5), [5]);
        assert_eq!(der_length(300), [0x82, 0x01, 0x2c]);
        let wrapped = rsa_pkcs1_to_pkcs8(&[0xAA; 200]);
        assert_eq!(&wrapped[..4], &[0x30, 0x81, 0xdd, 0x02]);
        assert_eq!(wrapped.len(), 3 + 0xdd);
    }
}
