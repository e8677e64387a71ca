//! A private key as Magnum keeps it: PKCS#8 encrypted with a passphrase (Python
//! cryptography's `BestAvailableEncryption`, which OpenSSL writes as PBES2 with
//! PBKDF2-HMAC-SHA256, 2,048 iterations, and AES-256-CBC), the passphrase a short id
//! (`common/short_id.py`: 12 lower-case base32 characters).

use pkcs8::der::pem::LineEnding;
use pkcs8::der::Decode as _;
use pkcs8::{EncryptedPrivateKeyInfo, PrivateKeyInfo, SecretDocument};

/// OpenSSL's `PKCS5_DEFAULT_ITER`, what Magnum's keys are written with.
const PBKDF2_ITERATIONS: u32 = 2048;
const BASE32: &[u8; 32] = b"abcdefghijklmnopqrstuvwxyz234567";

/// Why a key could not be protected or opened (never says anything of the key itself).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum KeyError {
    #[error("the private key is not PEM-encoded PKCS#8")]
    NotPkcs8,
    #[error("the private key cannot be decrypted with its passphrase")]
    WrongPassphrase,
    #[error("the private key cannot be encrypted: {0}")]
    Encrypt(String),
    #[error("the system random generator failed")]
    Random,
}

/// Random bytes from the system's generator (AWS-LC's, which reads the OS).
fn random<const N: usize>() -> Result<[u8; N], KeyError> {
    let mut b = [0u8; N];
    aws_lc_rs::rand::fill(&mut b).map_err(|_| KeyError::Random)?;
    Ok(b)
}

/// A random 12-character id, as Magnum's `short_id.generate_id()` makes them: 60 random
/// bits in lower-case base32.
pub fn short_id() -> Result<String, KeyError> {
    let bits = u64::from_be_bytes(random()?) >> 4;
    Ok((0..12)
        .map(|i| BASE32[((bits >> (55 - 5 * i)) & 31) as usize] as char)
        .collect())
}

/// `der` (a PKCS#8 private key) encrypted with `passphrase`, as PEM
/// (`ENCRYPTED PRIVATE KEY`).
pub fn encrypt_private_key(der: &[u8], passphrase: &str) -> Result<String, KeyError> {
    let info = PrivateKeyInfo::from_der(der).map_err(|_| KeyError::NotPkcs8)?;
    let (salt, iv): ([u8; 16], [u8; 16]) = (random()?, random()?);
    let params =
        pkcs8::pkcs5::pbes2::Parameters::pbkdf2_sha256_aes256cbc(PBKDF2_ITERATIONS, &salt, &iv)
            .map_err(|e| KeyError::Encrypt(e.to_string()))?;
    let doc = info
        .encrypt_with_params(params, passphrase)
        .map_err(|e| KeyError::Encrypt(e.to_string()))?;
    doc.to_pem("ENCRYPTED PRIVATE KEY", LineEnding::LF)
        .map(|pem| pem.to_string())
        .map_err(|e| KeyError::Encrypt(e.to_string()))
}

/// The unencrypted PKCS#8 PEM (`PRIVATE KEY`) of a key Magnum stored: encrypted with
/// `passphrase` when one is given, else stored in the clear.
pub fn decrypt_private_key(pem: &str, passphrase: Option<&str>) -> Result<String, KeyError> {
    let (label, doc) = SecretDocument::from_pem(pem).map_err(|_| KeyError::NotPkcs8)?;
    let clear = match (label, passphrase) {
        ("ENCRYPTED PRIVATE KEY", Some(p)) => EncryptedPrivateKeyInfo::from_der(doc.as_bytes())
            .map_err(|_| KeyError::NotPkcs8)?
            .decrypt(p)
            .map_err(|_| KeyError::WrongPassphrase)?,
        ("PRIVATE KEY", _) => doc,
        _ => return Err(KeyError::NotPkcs8),
    };
    clear
        .to_pem("PRIVATE KEY", LineEnding::LF)
        .map(|pem| pem.to_string())
        .map_err(|_| KeyError::NotPkcs8)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_id_is_twelve_lower_case_base32_characters() {
        let a = short_id().expect("random");
        assert_eq!(a.len(), 12);
        assert!(a.bytes().all(|b| BASE32.contains(&b)), "{a}");
        assert_ne!(a, short_id().expect("random"));
    }
}
