//! The HTTP(S) client of a session: rustls with the public web PKI roots, plus the CA file
//! given with `--ca-cert` (a private CA, a self-signed server).

use super::*;

/// A client over HTTP(S) with rustls: the public web PKI roots, plus the CA file given with
/// `--ca-cert` (a private CA, a self-signed server).
pub(super) fn base_client(endpoint: &Endpoint) -> Result<clickhouse::Client, CollectError> {
    let failed = |message: String| CollectError::Unreachable { endpoint: endpoint.to_string(), message };
    let mut roots = rustls::RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    if let Some(path) = &endpoint.ca_cert {
        let shown = path.display();
        let text = crate::regular_file::read(path).map_err(|e| CollectError::CaCert(format!("{shown}: {e}")))?;
        let certs =
            pem_certificates(&text).map_err(|(line, e)| CollectError::CaCert(format!("{shown}:{line}: {e}")))?;
        if certs.is_empty() {
            return Err(CollectError::CaCert(format!(
                "{shown}: no PEM certificate in it (-----BEGIN CERTIFICATE-----)"
            )));
        }
        for (line, cert) in certs {
            roots.add(cert).map_err(|e| {
                CollectError::CaCert(format!(
                    "{shown}:{line}: the certificate begun here is not a valid CA certificate: {e}"
                ))
            })?;
        }
    }
    let provider = std::sync::Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| failed(format!("TLS: {e}")))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    let mut http = HttpConnector::new();
    http.enforce_http(false);
    let connector = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls)
        .https_or_http()
        .enable_http1()
        .wrap_connector(http);
    // idle sockets closed before the server's keep-alive (10 s since 23.11, 3 s before) closes them
    Ok(clickhouse::Client::with_http_client(
        hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
            .pool_idle_timeout(Duration::from_millis(2_500))
            .build(connector),
    ))
}

/// The certificates of a PEM file, each with the line its section begins on; else the
/// line and what is wrong there (a section not closed, not base64, not a certificate).
fn pem_certificates(text: &[u8]) -> Result<Vec<(usize, rustls::pki_types::CertificateDer<'static>)>, (usize, String)> {
    use rustls::pki_types::{CertificateDer, pem::PemObject};
    let mut certs = Vec::new();
    let mut open: Option<(usize, usize, &[u8])> = None; // line, byte offset, label
    let mut offset = 0;
    for (n, line) in text.split_inclusive(|b| *b == b'\n').enumerate() {
        let number = n + 1;
        let trimmed = line.trim_ascii();
        if let Some(label) = trimmed.strip_prefix(b"-----BEGIN ").and_then(|l| l.strip_suffix(b"-----")) {
            if let Some((begun, _, _)) = open {
                return Err((number, format!("a BEGIN line inside the section begun at line {begun}")));
            }
            open = Some((number, offset, label));
        } else if trimmed.starts_with(b"-----END ") {
            let Some((begun, start, label)) = open.take() else {
                return Err((number, "an END line without its BEGIN".into()));
            };
            if label != b"CERTIFICATE" {
                let label = String::from_utf8_lossy(label);
                return Err((begun, format!("a {label}, not a CERTIFICATE")));
            }
            let cert = CertificateDer::from_pem_slice(&text[start..offset + line.len()])
                .map_err(|e| (begun, format!("the certificate begun here is malformed: {e}")))?;
            certs.push((begun, cert));
        }
        offset += line.len();
    }
    match open {
        Some((begun, _, _)) => Err((begun, "the section begun here has no END line".into())),
        None => Ok(certs),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_malformed_pem_says_what_and_where() {
        let at = |text: &str| pem_certificates(text.as_bytes()).map(|c| c.len());
        assert_eq!(at("# CA\n-----BEGIN CERTIFICATE-----\nMIIB!!\n-----END CERTIFICATE-----\n").unwrap_err().0, 2);
        let (line, why) = at("x\n\n-----BEGIN CERTIFICATE-----\nMIIB\n").unwrap_err();
        assert_eq!((line, why.as_str()), (3, "the section begun here has no END line"));
        let (line, why) = at("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n").unwrap_err();
        assert_eq!((line, why.as_str()), (1, "a PRIVATE KEY, not a CERTIFICATE"));
        assert_eq!(at("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"), Ok(1));
    }
}
