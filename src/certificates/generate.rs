//! Generating a cluster's certificates as Magnum's `x509.operations` does: an RSA key, a
//! certificate signed with SHA-256, a random 128-bit serial (a UUID), valid from a day ago
//! for `[x509] term_of_validity` days (1,825). A CA has `CA:TRUE, pathlen:0` and
//! `keyCertSign`; the client certificate `CA:FALSE`, `digitalSignature, keyEncipherment`
//! and `clientAuth`. Subject and issuer are common names, as Magnum writes them.

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose, SerialNumber, PKCS_RSA_SHA256,
};
use rsa::pkcs8::EncodePrivateKey as _;
use rsa::rand_core::OsRng;

use super::protected_key::{encrypt_private_key, short_id, KeyError};
use super::{CLIENT_ORGANIZATION, CLIENT_SUBJECT, TERM_OF_VALIDITY_DAYS};

/// A certificate with its key, as the `x509keypair` table holds them: the certificate
/// PEM, the private key encrypted (PKCS#8 PEM) and its passphrase.
#[derive(Clone, PartialEq, Eq)]
pub struct KeyPairPem {
    pub certificate: String,
    pub private_key: String,
    pub passphrase: String,
}

impl std::fmt::Debug for KeyPairPem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyPairPem")
            .field("certificate", &self.certificate)
            .finish_non_exhaustive()
    }
}

/// What Magnum's `generate_certificates_to_cluster` makes, in its order (the cluster CA,
/// the etcd CA, the front-proxy CA, the conductor's client certificate).
#[derive(Clone, Debug)]
pub struct ClusterCertificates {
    pub ca: KeyPairPem,
    pub etcd_ca: KeyPairPem,
    pub front_proxy_ca: KeyPairPem,
    pub magnum_client: KeyPairPem,
}

#[derive(Debug, thiserror::Error)]
pub enum GenerateError {
    #[error("cannot generate an RSA key: {0}")]
    Key(String),
    #[error("cannot build the certificate: {0}")]
    Certificate(#[from] rcgen::Error),
    #[error(transparent)]
    Protect(#[from] KeyError),
}

/// A cluster's four certificates. `issuer_name` is the cluster's name, or its uuid when
/// it has none (Magnum's `_get_issuer_name`).
pub fn cluster_certificates(
    issuer_name: &str,
    key_bits: usize,
) -> Result<ClusterCertificates, GenerateError> {
    let (ca, ca_key) = certificate_authority(issuer_name, key_bits)?;
    let (etcd_ca, _) = certificate_authority(issuer_name, key_bits)?;
    let (front_proxy_ca, _) = certificate_authority(issuer_name, key_bits)?;
    let issuer = Issuer::new(ca_params(issuer_name), ca_key);
    let magnum_client = client_certificate(&issuer, key_bits)?;
    Ok(ClusterCertificates {
        ca,
        etcd_ca,
        front_proxy_ca,
        magnum_client,
    })
}

fn common_name(cn: &str, organization: Option<&str>) -> DistinguishedName {
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, cn);
    if let Some(o) = organization {
        dn.push(DnType::OrganizationName, o);
    }
    dn
}

/// Validity and serial as Magnum's `sign` sets them.
fn base_params(subject: DistinguishedName) -> CertificateParams {
    let mut p = CertificateParams::default();
    p.distinguished_name = subject;
    let now = time::OffsetDateTime::now_utc();
    p.not_before = now - time::Duration::days(1);
    p.not_after = now + time::Duration::days(TERM_OF_VALIDITY_DAYS);
    p.serial_number = Some(SerialNumber::from_slice(uuid::Uuid::new_v4().as_bytes()));
    p
}

fn ca_params(issuer_name: &str) -> CertificateParams {
    let mut p = base_params(common_name(issuer_name, None));
    p.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    p.key_usages = vec![KeyUsagePurpose::KeyCertSign];
    p
}

/// A new RSA key: the PKCS#8 DER and the signing key.
fn rsa_key(bits: usize) -> Result<(Vec<u8>, KeyPair), GenerateError> {
    let key =
        rsa::RsaPrivateKey::new(&mut OsRng, bits).map_err(|e| GenerateError::Key(e.to_string()))?;
    let der = key
        .to_pkcs8_der()
        .map_err(|e| GenerateError::Key(e.to_string()))?;
    let pair = KeyPair::from_pkcs8_der_and_sign_algo(&der.as_bytes().into(), &PKCS_RSA_SHA256)?;
    Ok((der.as_bytes().to_vec(), pair))
}

fn protect(der: &[u8], certificate: String) -> Result<KeyPairPem, GenerateError> {
    let passphrase = short_id();
    let private_key = encrypt_private_key(der, &passphrase)?;
    Ok(KeyPairPem {
        certificate,
        private_key,
        passphrase,
    })
}

fn certificate_authority(
    issuer_name: &str,
    bits: usize,
) -> Result<(KeyPairPem, KeyPair), GenerateError> {
    let (der, key) = rsa_key(bits)?;
    let cert = ca_params(issuer_name).self_signed(&key)?;
    Ok((protect(&der, cert.pem())?, key))
}

fn client_certificate(
    issuer: &Issuer<'_, KeyPair>,
    bits: usize,
) -> Result<KeyPairPem, GenerateError> {
    let (der, key) = rsa_key(bits)?;
    let mut p = base_params(common_name(CLIENT_SUBJECT, Some(CLIENT_ORGANIZATION)));
    p.is_ca = IsCa::ExplicitNoCa;
    p.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    p.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    let cert = p.signed_by(&key, issuer)?;
    protect(&der, cert.pem())
}

#[cfg(test)]
mod tests {
    use super::super::{decrypt_private_key, RSA_KEY_BITS};
    use super::*;
    use rcgen::PublicKeyData as _;
    use x509_parser::prelude::{FromDer as _, X509Certificate};

    fn parse(pem: &str) -> Vec<u8> {
        x509_parser::pem::parse_x509_pem(pem.as_bytes())
            .expect("pem")
            .1
            .contents
    }

    #[test]
    fn a_cluster_gets_three_cas_and_a_client_certificate_signed_by_its_ca() {
        let certs = cluster_certificates("k8s", RSA_KEY_BITS).expect("generate");
        for ca in [&certs.ca, &certs.etcd_ca, &certs.front_proxy_ca] {
            let der = parse(&ca.certificate);
            let (_, c) = X509Certificate::from_der(&der).expect("x509");
            assert_eq!(c.subject().to_string(), "CN=k8s");
            assert_eq!(c.issuer().to_string(), "CN=k8s");
            let bc = c.basic_constraints().expect("bc").expect("present");
            assert!(bc.critical && bc.value.ca);
            assert_eq!(bc.value.path_len_constraint, Some(0));
            let ku = c.key_usage().expect("ku").expect("present");
            assert!(ku.critical && ku.value.key_cert_sign());
            assert!(c.verify_signature(None).is_ok());
            let days =
                (c.validity().not_after.timestamp() - c.validity().not_before.timestamp()) / 86_400;
            assert_eq!(days, TERM_OF_VALIDITY_DAYS + 1);
        }
        let ca_der = parse(&certs.ca.certificate);
        let (_, ca) = X509Certificate::from_der(&ca_der).expect("ca");
        let der = parse(&certs.magnum_client.certificate);
        let (_, client) = X509Certificate::from_der(&der).expect("client");
        assert_eq!(client.subject().to_string(), "CN=admin, O=system:masters");
        assert_eq!(client.issuer().to_string(), "CN=k8s");
        assert!(client.verify_signature(Some(ca.public_key())).is_ok());
        assert!(
            !client
                .basic_constraints()
                .expect("bc")
                .expect("present")
                .value
                .ca
        );
        let eku = client.extended_key_usage().expect("eku").expect("present");
        assert!(eku.value.client_auth);
        // The CAs are distinct keys.
        assert_ne!(certs.ca.certificate, certs.etcd_ca.certificate);
    }

    #[test]
    fn a_private_key_opens_with_its_own_passphrase_only() {
        let certs = cluster_certificates("k8s", RSA_KEY_BITS).expect("generate");
        let k = &certs.ca;
        assert!(k
            .private_key
            .starts_with("-----BEGIN ENCRYPTED PRIVATE KEY-----"));
        let clear = decrypt_private_key(&k.private_key, Some(&k.passphrase)).expect("decrypt");
        assert!(clear.starts_with("-----BEGIN PRIVATE KEY-----"));
        // The key is the certificate's.
        let pair = KeyPair::from_pkcs8_pem_and_sign_algo(&clear, &PKCS_RSA_SHA256).expect("key");
        let der = parse(&k.certificate);
        let (_, c) = X509Certificate::from_der(&der).expect("x509");
        assert_eq!(c.public_key().raw, pair.subject_public_key_info());
        assert_eq!(
            decrypt_private_key(&k.private_key, Some("not-its-own")),
            Err(KeyError::WrongPassphrase)
        );
        assert!(!format!("{k:?}").contains(&k.passphrase));
    }
}
