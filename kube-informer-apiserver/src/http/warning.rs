//! The `Warning` headers of one answer, as k8s.io/apiserver's warning recorder (`filters/warning.go`) writes them:
//! each text once, in the order first given; past 4,096 characters in all, every text cut to 256 characters; past
//! that, no more. A text with a control character is no valid header and is dropped (`NewWarningHeader`'s rule).

use std::collections::HashSet;

/// Characters of warning text an answer carries before its warnings are truncated.
const TRUNCATE_AT_TOTAL_RUNES: usize = 4 * 1024;
/// The length each warning is cut to once truncating.
const TRUNCATE_ITEM_RUNES: usize = 256;

/// The header values (`299 - "text"`) for `texts`.
pub(crate) fn headers<'a>(texts: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    headers_within(texts, TRUNCATE_AT_TOTAL_RUNES, TRUNCATE_ITEM_RUNES)
}

fn headers_within<'a>(texts: impl IntoIterator<Item = &'a str>, total: usize, item: usize) -> Vec<String> {
    let mut recorded: HashSet<&str> = HashSet::new();
    let mut ordered: Vec<&str> = Vec::new();
    let mut written = 0usize;
    let mut truncating = false;
    let mut out = Vec::new();
    for text in texts {
        if text.is_empty() {
            continue;
        }
        // Over the limit and already truncating: nothing more is added.
        if truncating && written >= total {
            break;
        }
        if !recorded.insert(text) {
            continue;
        }
        ordered.push(text);
        let (shown, runes) = if truncating {
            cut(text, item)
        } else {
            (text, text.chars().count())
        };
        let Some(value) = header(shown) else {
            continue;
        };
        if written + runes <= total || truncating {
            written += runes;
            out.push(value);
            continue;
        }
        // Past the limit for the first time: start again with every warning so far cut short.
        truncating = true;
        written = 0;
        out.clear();
        for text in &ordered {
            let (shown, runes) = cut(text, item);
            if let Some(value) = header(shown) {
                written += runes;
                out.push(value);
            }
        }
    }
    out
}

/// `text` cut to `max` characters, and its length in characters.
fn cut(text: &str, max: usize) -> (&str, usize) {
    match text.char_indices().nth(max) {
        Some((end, _)) => (&text[..end], max),
        None => (text, text.chars().count()),
    }
}

/// `299 - "text"` with `"` and `\` escaped; `None` for text with a control character.
fn header(text: &str) -> Option<String> {
    if text.chars().any(char::is_control) {
        return None;
    }
    let mut out = String::with_capacity(text.len() + 8);
    out.push_str("299 - \"");
    for c in text.chars() {
        if c == '"' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// k8s.io/apiserver's `TestTruncation`, with its limits (25 characters in all, 5 each).
    #[test]
    fn truncation_follows_kube_apiservers_recorder() {
        let texts = ["aaaaaaaaaa", "aaaaaaaaaa", "bb", "ccc", "Iñtërnâtiô"];
        assert_eq!(
            headers_within(texts, 25, 5),
            [
                r#"299 - "aaaaaaaaaa""#,
                r#"299 - "bb""#,
                r#"299 - "ccc""#,
                r#"299 - "Iñtërnâtiô""#
            ]
        );
        let more = texts
            .into_iter()
            .chain(["e", "ffffffffff", "ffffffffff", "gggggggggg", "h"]);
        assert_eq!(
            headers_within(more, 25, 5),
            [
                r#"299 - "aaaaa""#,
                r#"299 - "bb""#,
                r#"299 - "ccc""#,
                r#"299 - "Iñtër""#,
                r#"299 - "e""#,
                r#"299 - "fffff""#,
                r#"299 - "ggggg""#
            ]
        );
    }

    #[test]
    fn duplicates_once_invalid_text_dropped_quotes_escaped() {
        assert_eq!(
            headers(["a", "", "a", "my\ntext", r#"say "hi" \o/"#]),
            [r#"299 - "a""#, r#"299 - "say \"hi\" \\o/""#]
        );
    }

    #[test]
    fn two_hundred_thousand_warnings_fit_in_a_few_kib() {
        let texts: Vec<String> = (0..200_000).map(|i| format!("unknown field \"spec.f{i}\"")).collect();
        let out = headers(texts.iter().map(String::as_str));
        let bytes: usize = out.iter().map(String::len).sum();
        assert!(bytes < 8 * 1024, "{bytes} bytes in {} headers", out.len());
        let repeated = vec!["duplicate field \"data.k\""; 200_000];
        assert_eq!(headers(repeated).len(), 1);
    }
}
