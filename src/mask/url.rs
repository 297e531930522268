//! Credentials inside URLs: a userinfo (`https://key:secret@host/`) and query parameters that
//! sign or authorize the request (an S3 presigned URL's `X-Amz-Signature`, an Azure SAS `sig`,
//! `password=`, `token=`), wherever the URL stands: an `<endpoint>`, a `url`, a DSN, a message.

use std::borrow::Cow;

use super::MASK;

/// Query parameters whose value is a credential, besides the names of
/// [`super::is_secret_name`]: AWS Signature V4 and Azure shared access signatures.
const CREDENTIAL_PARAMETERS: &[&str] =
    &["x-amz-signature", "x-amz-credential", "x-amz-security-token", "signature", "sig", "pwd", "pass", "auth"];

pub(super) fn may_hold_url(text: &str) -> bool {
    // each `:` then `//`: a substring search is set up anew for each text, which costs more
    // than a message's few colons
    let bytes = text.as_bytes();
    memchr::memchr_iter(b':', bytes).any(|i| bytes[i + 1..].starts_with(b"//"))
}

/// `text` with the userinfo and the credential query parameters of every URL masked.
pub fn mask_url_credentials(text: &str) -> Cow<'_, str> {
    if !may_hold_url(text) {
        return Cow::Borrowed(text);
    }
    let mut spans = Vec::new();
    let mut at = 0;
    while let Some(scheme_end) = memchr::memmem::find(&text.as_bytes()[at..], b"://").map(|i| at + i + 3) {
        let end = text[scheme_end..].find(ends_url).map_or(text.len(), |i| scheme_end + i);
        let url = &text[scheme_end..end];
        let authority_end = url.find(['/', '?', '#']).unwrap_or(url.len());
        // `user:password@`; a user alone (`clickhouse://app@host`) is no secret
        if let Some(userinfo) = url[..authority_end].rfind('@').filter(|&i| url[..i].contains(':')) {
            spans.push((scheme_end, scheme_end + userinfo));
        }
        if let Some(query) = url.find('?') {
            let query_start = scheme_end + query + 1;
            let query_end = url.find('#').map_or(end, |i| scheme_end + i);
            spans.extend(credential_values(text, query_start, query_end.max(query_start)));
        }
        at = end.max(scheme_end);
    }
    super::replace_spans(text, &spans, |_| MASK.to_string())
}

/// Where a URL written in a config, a message or a shell line ends.
fn ends_url(c: char) -> bool {
    c.is_whitespace() || matches!(c, '<' | '>' | '"' | '\'' | '`' | ')' | ']' | '}' | ',')
}

/// The value spans of credential parameters in `text[start..end]`, a query string whose
/// parameters are joined by `&` or, in XML, `&amp;`.
fn credential_values(text: &str, start: usize, end: usize) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    let mut at = start;
    while at < end {
        let rest = &text[at..end];
        let len = rest.find('&').unwrap_or(rest.len());
        let pair = &rest[..len];
        if let Some((name, value)) = pair.split_once('=')
            && !value.is_empty()
            && is_credential_parameter(name)
        {
            let value_start = at + name.len() + 1;
            spans.push((value_start, value_start + value.len()));
        }
        at += len + 1;
        if text[at.min(end)..end].starts_with("amp;") {
            at += "amp;".len();
        }
    }
    spans
}

fn is_credential_parameter(name: &str) -> bool {
    let decoded = percent_encoding::percent_decode_str(name).decode_utf8_lossy();
    CREDENTIAL_PARAMETERS.iter().any(|p| p.eq_ignore_ascii_case(&decoded)) || super::is_secret_name(&decoded)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn userinfo_and_signatures_are_masked() {
        let endpoint = "<endpoint>https://AKIA1:topsecret@b.s3.amazonaws.com/d/?X-Amz-Signature=abc&amp;X-Amz-Credential=def&amp;x-id=GetObject</endpoint>";
        assert_eq!(
            mask_url_credentials(endpoint),
            "<endpoint>https://******@b.s3.amazonaws.com/d/?X-Amz-Signature=******&amp;X-Amz-Credential=******&amp;x-id=GetObject</endpoint>"
        );
        assert_eq!(
            mask_url_credentials(
                "see https://acct.blob.core.windows.net/c?sv=2022&sig=xyz%2B== and clickhouse://u@h?password=pw"
            ),
            "see https://acct.blob.core.windows.net/c?sv=2022&sig=****** and clickhouse://u@h?password=******"
        );
        let plain = "https://ch.example.com:8443/?database=x and mailto:a@b";
        assert!(matches!(mask_url_credentials(plain), Cow::Borrowed(_)));
        assert!(matches!(mask_url_credentials("no url here"), Cow::Borrowed(_)));
    }
}
