//! The little XML S3 answers with: the `ListObjectsV2` result (keys, ETags, truncation and the
//! continuation token) and the `Error` document (code, message). Elements are found by name
//! and their text unescaped; nothing else of XML is needed (no attributes, no namespaces we
//! match on, no CDATA in these documents).

/// The text of every `<name>…</name>` directly found in `doc`, in order.
pub fn elements<'a>(doc: &'a str, name: &str) -> Vec<&'a str> {
    let open = format!("<{name}>");
    let close = format!("</{name}>");
    let mut out = Vec::new();
    let mut rest = doc;
    while let Some(start) = rest.find(&open) {
        let after = &rest[start + open.len()..];
        let Some(end) = after.find(&close) else {
            break;
        };
        out.push(&after[..end]);
        rest = &after[end + close.len()..];
    }
    out
}

/// The unescaped text of the first `<name>` element.
pub fn first(doc: &str, name: &str) -> Option<String> {
    elements(doc, name).first().map(|t| unescape(t))
}

/// XML's five entities and numeric character references.
pub fn unescape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(amp) = rest.find('&') {
        out.push_str(&rest[..amp]);
        let after = &rest[amp..];
        let Some(semi) = after.find(';') else {
            out.push_str(after);
            return out;
        };
        let entity = &after[1..semi];
        let decoded = match entity {
            "amp" => Some('&'),
            "lt" => Some('<'),
            "gt" => Some('>'),
            "quot" => Some('"'),
            "apos" => Some('\''),
            _ => entity
                .strip_prefix("#x")
                .or_else(|| entity.strip_prefix("#X"))
                .and_then(|h| u32::from_str_radix(h, 16).ok())
                .or_else(|| entity.strip_prefix('#').and_then(|d| d.parse().ok()))
                .and_then(char::from_u32),
        };
        match decoded {
            Some(c) => {
                out.push(c);
                rest = &after[semi + 1..];
            }
            None => {
                out.push('&');
                rest = &after[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// One page of `ListObjectsV2`.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct ListPage {
    /// `(key, etag)` of each object, the ETag without its quotes.
    pub objects: Vec<(String, String)>,
    /// `IsTruncated`.
    pub truncated: bool,
    /// `NextContinuationToken`.
    pub next_token: Option<String>,
}

/// Parses a `ListBucketResult`.
pub fn list_page(doc: &str) -> ListPage {
    let objects = elements(doc, "Contents")
        .into_iter()
        .filter_map(|c| {
            let key = first(c, "Key")?;
            let etag = first(c, "ETag").unwrap_or_default();
            Some((key, trim_etag(&etag).to_string()))
        })
        .collect();
    ListPage {
        objects,
        truncated: first(doc, "IsTruncated").is_some_and(|t| t.trim() == "true"),
        next_token: first(doc, "NextContinuationToken").filter(|t| !t.is_empty()),
    }
}

/// An ETag without the quotes S3 puts around it (as minio-go hands it to source-controller).
pub fn trim_etag(etag: &str) -> &str {
    etag.trim().trim_start_matches('"').trim_end_matches('"')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_truncated_page_with_escaped_keys() {
        let doc = r#"<?xml version="1.0" encoding="UTF-8"?>
<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>b</Name><Prefix></Prefix>
<KeyCount>2</KeyCount><MaxKeys>2</MaxKeys><IsTruncated>true</IsTruncated>
<Contents><Key>a&amp;b.yaml</Key><LastModified>2026-01-01T00:00:00.000Z</LastModified><ETag>&quot;abc&quot;</ETag><Size>3</Size></Contents>
<Contents><Key>dir/c&#x20;d.yaml</Key><ETag>"def"</ETag></Contents>
<NextContinuationToken>tok+/=</NextContinuationToken></ListBucketResult>"#;
        let page = list_page(doc);
        assert_eq!(
            page.objects,
            vec![
                ("a&b.yaml".to_string(), "abc".to_string()),
                ("dir/c d.yaml".to_string(), "def".to_string())
            ]
        );
        assert!(page.truncated);
        assert_eq!(page.next_token.as_deref(), Some("tok+/="));
    }

    #[test]
    fn reads_an_error_document() {
        let doc = "<Error><Code>NoSuchBucket</Code><Message>The specified bucket does not exist</Message></Error>";
        assert_eq!(first(doc, "Code").as_deref(), Some("NoSuchBucket"));
        assert_eq!(unescape("a &unknown; b &lt;"), "a &unknown; b <");
    }
}
