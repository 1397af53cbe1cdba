//! The top-level custom sections of a component's bytes, found without parsing the rest: a
//! section is an id byte, its size (LEB128) and its contents, so every other section is skipped
//! by its size.

/// The contents of the first top-level custom section called `name`, if there is one.
pub(crate) fn custom<'b>(bytes: &'b [u8], name: &str) -> Option<&'b [u8]> {
    let mut rest = bytes.get(8..)?;
    while let Some((&id, after)) = rest.split_first() {
        let (size, after) = leb128(after)?;
        let contents = after.get(..size)?;
        rest = &after[size..];
        if id == 0 {
            let (len, named) = leb128(contents)?;
            if named.get(..len)? == name.as_bytes() {
                return Some(&named[len..]);
            }
        }
    }
    None
}

/// An unsigned LEB128 number (at most 32 bits, as section sizes are) and what follows it.
fn leb128(bytes: &[u8]) -> Option<(usize, &[u8])> {
    let mut value: u64 = 0;
    for (i, &b) in bytes.iter().enumerate().take(5) {
        value |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Some((usize::try_from(value).ok()?, &bytes[i + 1..]));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn section(id: u8, contents: &[u8]) -> Vec<u8> {
        let mut out = vec![id];
        let mut n = contents.len();
        loop {
            let b = (n & 0x7f) as u8;
            n >>= 7;
            out.push(if n == 0 { b } else { b | 0x80 });
            if n == 0 {
                break;
            }
        }
        out.extend_from_slice(contents);
        out
    }

    fn named(name: &str, data: &[u8]) -> Vec<u8> {
        let mut c = vec![name.len() as u8];
        c.extend_from_slice(name.as_bytes());
        c.extend_from_slice(data);
        section(0, &c)
    }

    #[test]
    fn finds_a_custom_section_among_others_and_stops_at_truncation() {
        let mut bytes = b"\0asm\x0d\0\x01\0".to_vec();
        bytes.extend(section(1, &[7; 300]));
        bytes.extend(named("producers", b"x"));
        bytes.extend(named("package-docs", b"\x01{}"));
        assert_eq!(custom(&bytes, "package-docs"), Some(&b"\x01{}"[..]));
        assert_eq!(custom(&bytes, "producers"), Some(&b"x"[..]));
        assert_eq!(custom(&bytes, "missing"), None);
        // A size running past the end: nothing, not a panic.
        let cut = &bytes[..bytes.len() - 2];
        assert_eq!(custom(cut, "package-docs"), None);
        assert_eq!(custom(&[0xff; 20], "x"), None);
        assert_eq!(custom(b"\0asm", "x"), None);
    }
}
