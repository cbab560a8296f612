//! Base64 (RFC 4648), which the crate needs in a few places and takes no dependency for: kubeconfig `*-data` fields
//! and exec credentials (standard alphabet), and the embedded server's continue tokens (URL-safe, unpadded).

const STD: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const URL: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// Standard base64 with padding (§4), as Go's `base64.StdEncoding` writes it.
pub(crate) fn encode_std(data: &[u8]) -> String {
    encode(data, STD, true)
}

/// URL-safe base64 without padding (§5), as kube-apiserver writes continue tokens.
#[cfg_attr(not(feature = "testing"), allow(dead_code))]
pub(crate) fn encode_url(data: &[u8]) -> String {
    encode(data, URL, false)
}

fn encode(data: &[u8], alphabet: &[u8; 64], pad: bool) -> String {
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for chunk in data.chunks(3) {
        let b = [chunk[0], *chunk.get(1).unwrap_or(&0), *chunk.get(2).unwrap_or(&0)];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(alphabet[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else if pad {
                out.push('=');
            }
        }
    }
    out
}

/// Decodes standard or URL-safe base64. Whitespace (line breaks in hand-edited kubeconfigs) is ignored and padding is
/// optional; anything else outside the alphabets is an error. The error names the problem and its byte offset, never
/// the content (it may be a credential).
pub(crate) fn decode(input: &str) -> Result<Vec<u8>, String> {
    fn value(c: u8) -> Option<u32> {
        Some(u32::from(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            _ => return None,
        }))
    }
    let mut out = Vec::with_capacity(input.len() / 4 * 3);
    let mut acc = 0u32;
    let mut bits = 0u32;
    let mut padding = 0usize;
    for (i, c) in input.bytes().enumerate() {
        if c.is_ascii_whitespace() {
            continue;
        }
        if c == b'=' {
            padding += 1;
            continue;
        }
        if padding > 0 {
            return Err(format!("not valid base64: data after padding at byte {i}"));
        }
        let Some(v) = value(c) else {
            return Err(format!("not valid base64: unexpected character at byte {i}"));
        };
        acc = (acc << 6) | v;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    // A single leftover character (6 bits) cannot come from any input.
    if bits >= 6 || padding > 2 {
        return Err("not valid base64: truncated input".into());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_rfc4648_vectors() {
        for (plain, encoded) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(encode_std(plain.as_bytes()), encoded);
            assert_eq!(encode_url(plain.as_bytes()), encoded.trim_end_matches('='));
            assert_eq!(decode(encoded).unwrap(), plain.as_bytes());
            assert_eq!(decode(encoded.trim_end_matches('=')).unwrap(), plain.as_bytes());
        }
        assert_eq!(decode("Zm9v\nYmE").unwrap(), b"fooba");
        assert_eq!(encode_url(&[0xfb, 0xff]), "-_8");
        assert_eq!(encode_std(&[0xfb, 0xff]), "+/8=");
        assert_eq!(decode("-_8").unwrap(), [0xfb, 0xff]);
        assert_eq!(decode("+/8=").unwrap(), [0xfb, 0xff]);
        let all: Vec<u8> = (0..=255).collect();
        assert_eq!(decode(&encode_std(&all)).unwrap(), all);
        assert_eq!(decode(&encode_url(&all)).unwrap(), all);
    }

    #[test]
    fn rejects_garbage_without_echoing_it() {
        let err = decode("c2VjcmV0*").unwrap_err();
        assert!(
            err.contains("unexpected character at byte 8") && !err.contains('*'),
            "{err}"
        );
        assert!(decode("Zg==Zg").is_err());
        assert!(decode("Z").is_err());
        assert!(decode("ab!c").is_err());
        assert!(decode("Zg===").is_err());
    }
}
