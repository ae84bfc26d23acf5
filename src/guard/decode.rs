//! Text encodings of tool results: whether raw bytes are text, in which encoding, and the UTF-8
//! text handed on for them ([`decode`]).
//!
//! Tools print in the console's code page (CP936/GBK on a Chinese Windows, Shift_JIS, EUC-KR,
//! Big5, Windows-1252), PowerShell redirects write UTF-16, and shell transcripts carry the odd
//! NUL byte. Such output is text and must be shown as text, never hidden as "binary". The rules,
//! tried in order (the constants below give each threshold and why):
//!
//! 1. **UTF-8 without NUL** → the text is the bytes, unchanged (the usual case; one validation
//!    pass and one `memchr`).
//! 2. **Known binary magic** (`infer`, text types excluded: PNG, JPEG, gzip, ELF, ZIP, ...)
//!    → binary, when the magic cannot begin a text (`strong_magic`). Only checked for input
//!    that is not clean UTF-8 (a valid UTF-8 text that happens to start with `ID3` is text).
//! 3. **UTF-16 BOM** (`FF FE` / `FE FF`) → UTF-16LE/BE, if the decode is plausible text
//!    ([`plausible`]).
//! 4. **UTF-16 without BOM**, by where the NULs fall: text in Latin scripts encoded as UTF-16
//!    has a NUL high byte in most code units. At least [`UTF16_MIN_UNITS`] code units, at least
//!    one in [`UTF16_NUL_UNIT_DIVISOR`] with a NUL byte on one side, and at most one in
//!    [`UTF16_OTHER_SIDE_DIVISOR`] of those on the other side; then the decode must be plausible.
//! 5. **NULs**: more than one byte in [`MAX_NUL_DIVISOR`] NUL → binary. Fewer ("a few") are
//!    shown as `␀` (U+2400) in otherwise valid text.
//! 6. **UTF-8 with a few bad bytes** → UTF-8, each bad sequence shown as U+FFFD. "A few": an
//!    incomplete character cut off at the very end (a truncated output), or valid multi-byte
//!    characters outnumbering the bad sequences [`UTF8_EVIDENCE_RATIO`] to one, or at most
//!    [`FEW_BAD_SEQUENCES`] bad sequences making up under 1 % of the bytes.
//! 7. **A legacy encoding** guessed by `chardetng` (Firefox's detector, by `encoding_rs`'s
//!    author), decoded by `encoding_rs`, if the decode is plausible text and its scripts fit the
//!    encoding's language (kana for Japanese, mostly Hangul for Korean); if not, the legacy CJK
//!    encodings are tried in turn (a single bad byte disqualifies an encoding in `chardetng`).
//! 8. Otherwise the older rule: at most 10 % of the bytes invalid UTF-8 or NUL → UTF-8 with
//!    U+FFFD.
//! 9. **Text with binary lines** ([`mixed`]: most lines clean UTF-8, holding most bytes) →
//!    the clean lines as they are, each other line as `[<n> bytes of binary data]`; else
//!    binary. Also tried when rule 3-8's control-character test fails.
//!
//! Text in rules 3-8 also has to pass the control-character test ([`MAX_CONTROL_PERCENT`]).
//! Whenever the text handed on is not the input's exact bytes ([`Decoded::is_exact`]), the
//! pipeline saves the raw bytes and points to them ([`Decoded::describe`]).

use std::borrow::Cow;

use chardetng::{EncodingDetector, Iso2022JpDetection, Utf8Detection};
use encoding_rs::{Encoding, BIG5, EUC_JP, EUC_KR, GBK, SHIFT_JIS, UTF_16BE, UTF_16LE, UTF_8};

/// What NUL bytes (U+0000) are shown as: U+2400 SYMBOL FOR NULL, one visible char.
pub const NUL_MARK: char = '\u{2400}';

/// Text may hold at most one NUL per this many bytes (12.5 %); more is binary. NUL-separated
/// lists (`find -print0`, `git ls-files -z`, `/proc/<pid>/environ`) are text with one NUL per
/// entry, ~5-10 % for paths of 10-20 chars; real binaries that survive the other tests (valid
/// UTF-8 apart from the NULs, few control bytes, no known magic) are NUL-padded records, for
/// which showing the text is harmless because the raw bytes are saved too. `abc\0` (25 %) stays
/// binary.
pub const MAX_NUL_DIVISOR: usize = 8;

/// Decoded text may hold at most this many percent control characters other than TAB, LF, VT,
/// FF, CR, BEL, BS, SO, SI and ESC (which terminals use) and NUL (see [`MAX_NUL_DIVISOR`]);
/// C1 controls (U+0080-U+009F), private-use characters and noncharacters count too. Uniformly
/// random bytes hold ~8.6 % such C0 bytes (22 of 256), real text almost none; one is always
/// allowed (a tool that printed one odd byte).
pub const MAX_CONTROL_PERCENT: usize = 1;

/// At most this many bad UTF-8 sequences (each under 1 % of the bytes in total) in otherwise
/// ASCII text are "a few bad bytes" and decoded as UTF-8 with U+FFFD: a stray byte in a log is
/// more often corruption than a legacy encoding, and a few bytes are too little evidence for
/// `chardetng` (its scores need several non-ASCII characters).
pub const FEW_BAD_SEQUENCES: usize = 3;

/// Valid multi-byte UTF-8 characters must outnumber bad sequences this many to one for the text
/// to count as UTF-8 with errors: legacy CJK text read as UTF-8 forms a valid multi-byte
/// character by accident for roughly one bad sequence in five to ten (a GBK lead byte in
/// E0-EF followed by two bytes in 80-BF), so 4:1 keeps it out while a UTF-8 file with a damaged
/// byte among its accented or CJK characters stays UTF-8.
pub const UTF8_EVIDENCE_RATIO: usize = 4;

/// Rule 8 (the rule before legacy detection existed): text with more than one in this many bytes
/// invalid UTF-8 or NUL is binary (10 %).
pub const INVALID_RATIO_DIVISOR: usize = 10;

/// A UTF-16 candidate without BOM needs at least this many code units (8 bytes): `abc\0` must
/// not become one CJK char and a `c`.
pub const UTF16_MIN_UNITS: usize = 4;

/// A UTF-16 candidate without BOM has at least this many NUL bytes on its NUL side: one NUL in
/// `ok\0done\n` made it four CJK characters.
pub const UTF16_MIN_NULS: usize = 3;

/// A UTF-16 candidate without BOM has a NUL byte on one side in at least one code unit in this
/// many (25 %): ASCII and Latin-1 characters, spaces and newlines all have a zero high byte.
pub const UTF16_NUL_UNIT_DIVISOR: usize = 4;

/// ...and at most one NUL byte on the other side per this many on the first side: U+0100,
/// U+2000, U+3000, U+4E00 and a few others have a zero low byte; binary data has NULs on both.
pub const UTF16_OTHER_SIDE_DIVISOR: usize = 4;

/// At most one char in this many of a decoded text may be U+FFFD (plus one, for a character cut
/// off at the end): `chardetng` rejects an encoding at its first error, so this only matters
/// past the prefix it reads ([`DETECT_BYTES`]) and for UTF-16.
pub const MAX_ERROR_DIVISOR: usize = 1_000;

/// Bytes fed to `chardetng`, from just before the first non-ASCII byte (256 KiB): enough for a
/// confident guess (thousands of non-ASCII characters), and bounded time on huge inputs
/// (`chardetng` runs 27 candidate decoders; a 1 MB GBK output is read in ~42 ms on the 2-core
/// dev CPU, `cargo bench --bench pipeline -- decode`).
pub const DETECT_BYTES: usize = 256 << 10;

/// Single-byte Latin guesses are rejected when they hold this many non-ASCII chars in a row
/// (U+0080-U+024F): real Latin text has at most two or three (`chardetng` penalises four or
/// more "a lot" for the same reason), while CJK bytes or binary read as windows-1252 give long
/// runs (`版本` is four).
pub const LATIN_RUN_LIMIT: usize = 4;

/// A CJK decode with at least this many ideographs must fit its language's scripts
/// ([`script_fits`]); fewer are too little to judge.
pub const SCRIPT_MIN_IDEOGRAPHS: usize = 4;

/// Bytes at the start looked at by [`strong_magic`] (8: the longest common magic numbers).
const MAGIC_PEEK_BYTES: usize = 8;

/// Legacy CJK encodings tried, in this order, when `chardetng`'s guess is not plausible.
const CJK: [&Encoding; 5] = [GBK, SHIFT_JIS, EUC_KR, BIG5, EUC_JP];

/// A text result as UTF-8: the text handed on and how it was obtained from the bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decoded<'a> {
    /// The text: the input itself when [`Decoded::is_exact`], else the decoded text with NULs
    /// shown as [`NUL_MARK`] and undecodable sequences as U+FFFD.
    pub text: Cow<'a, str>,
    /// The encoding the bytes were read in (`UTF-8` also for the lossy and NUL cases).
    pub encoding: &'static Encoding,
    /// Byte sequences that could not be decoded, each shown as one U+FFFD.
    pub invalid: usize,
    /// NUL bytes (or UTF-16 NUL code units) shown as [`NUL_MARK`].
    pub nuls: usize,
    /// Lines of binary bytes in a text, each shown as `[<n> bytes of binary data]`
    /// ([`mixed`]).
    pub binary_lines: usize,
}

impl Decoded<'_> {
    /// True when [`Decoded::text`] is byte-identical to the input (valid UTF-8 without NUL).
    pub fn is_exact(&self) -> bool {
        self.encoding == UTF_8 && self.invalid == 0 && self.nuls == 0 && self.binary_lines == 0
    }

    /// The encoding's name when the text is not the exact input (`GBK`, `UTF-16LE`,
    /// `windows-1252`, `UTF-8` for a lossy or NUL-marked UTF-8 text; `encoding_rs` names, which
    /// are the WHATWG Encoding Standard's), `None` when it is.
    pub fn label(&self) -> Option<&'static str> {
        (!self.is_exact()).then(|| self.encoding.name())
    }

    /// What was done to the bytes, e.g. `decoded from GBK`, `decoded from UTF-16LE, 2 NUL bytes
    /// shown as ␀`, `1 invalid UTF-8 sequence shown as �`; empty when exact.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if self.encoding != UTF_8 {
            parts.push(format!("decoded from {}", self.encoding.name()));
        }
        if self.invalid > 0 {
            let s = if self.invalid == 1 { "" } else { "s" };
            parts.push(format!(
                "{} invalid {} sequence{s} shown as \u{FFFD}",
                self.invalid,
                self.encoding.name()
            ));
        }
        if self.nuls > 0 {
            let s = if self.nuls == 1 { "" } else { "s" };
            parts.push(format!("{} NUL byte{s} shown as {NUL_MARK}", self.nuls));
        }
        if self.binary_lines > 0 {
            let s = if self.binary_lines == 1 { "" } else { "s" };
            parts.push(format!(
                "{} line{s} of binary bytes shown as `[<n> bytes of binary data]`",
                self.binary_lines
            ));
        }
        parts.join(", ")
    }

    /// Moves the text out, owned.
    pub fn into_text(self) -> String {
        self.text.into_owned()
    }
}

/// Reads `bytes` as text by the module's rules; `None` when they are binary.
pub fn decode(bytes: &[u8]) -> Option<Decoded<'_>> {
    if memchr::memchr(0, bytes).is_none() {
        if let Ok(s) = std::str::from_utf8(bytes) {
            return Some(Decoded {
                text: Cow::Borrowed(s),
                encoding: UTF_8,
                invalid: 0,
                nuls: 0,
                binary_lines: 0,
            });
        }
    }
    if strong_magic(bytes) {
        return None;
    }
    let bom = Encoding::for_bom(bytes);
    if let Some((enc, n)) = bom {
        if enc != UTF_8 {
            if let Some(d) = decode_with(enc, &bytes[n..]) {
                return Some(d);
            }
        }
    }
    if let Some(enc) = utf16_by_nuls(bytes) {
        if let Some(d) = decode_with(enc, bytes) {
            return Some(d);
        }
    }
    let st = Utf8Stats::of(bytes);
    if !few_controls(st.controls, bytes.len()) {
        return mixed(bytes);
    }
    if st.nuls * MAX_NUL_DIVISOR > bytes.len() {
        // A short list of names each ended by a NUL (`git status -z`: `M\0a.rs\0`) is text
        // whatever its share of NULs.
        return (st.invalid_seqs == 0 && nul_separated(bytes)).then(|| utf8_lossy(bytes));
    }
    let few_bad = st.invalid_seqs == 0
        || st.invalid_seqs * UTF8_EVIDENCE_RATIO <= st.multibyte
        || (st.invalid_seqs <= FEW_BAD_SEQUENCES && st.invalid_bytes * 100 < bytes.len());
    if few_bad {
        return Some(utf8_lossy(bytes));
    }
    if bom.is_none() {
        if let Some(d) = legacy(bytes, st.invalid_seqs) {
            return Some(d);
        }
    }
    if (st.invalid_bytes + st.nuls) * INVALID_RATIO_DIVISOR <= bytes.len() {
        return Some(utf8_lossy(bytes));
    }
    mixed(bytes)
}

/// Fewest non-blank lines of a text with binary lines ([`mixed`]).
pub const MIXED_MIN_LINES: usize = 20;

/// Least share of a text's non-blank lines, in percent, that must be clean UTF-8 for its other
/// lines to be binary lines in a text ([`mixed`]).
pub const MIXED_MIN_CLEAN_PERCENT: usize = 80;

/// `line` as text when it is valid UTF-8 with no NUL and no odd control char
/// ([`is_odd_char`]); `None` for a binary line ([`mixed`]).
fn clean_line(line: &[u8]) -> Option<&str> {
    std::str::from_utf8(line)
        .ok()
        .filter(|s| !s.chars().any(|c| c == '\0' || is_odd_char(c)))
}

/// A text with lines of binary bytes in it, as `git diff --check` prints a binary file's lines
/// among its findings (trial of session 52: 110 of 1,023 lines, a third of the bytes, hid the
/// whole output as "raw binary data"): no magic `infer` knows, at least [`MIXED_MIN_LINES`]
/// non-blank lines, at least [`MIXED_MIN_CLEAN_PERCENT`] % of them clean (valid UTF-8, no NUL,
/// no odd control byte) and holding at least half the bytes. Each other line is shown as
/// `[<n> bytes of binary data]`, so the lines keep their numbers in the saved file. `None`
/// otherwise (binary).
fn mixed(bytes: &[u8]) -> Option<Decoded<'static>> {
    if super::binary::sniff(bytes).is_some() {
        return None;
    }
    let (mut lines, mut clean_lines, mut clean_bytes) = (0, 0, 0);
    for l in bytes.split(|&b| b == b'\n') {
        if l.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        lines += 1;
        if clean_line(l).is_some() {
            clean_lines += 1;
            clean_bytes += l.len();
        }
    }
    if lines < MIXED_MIN_LINES
        || clean_lines * 100 < lines * MIXED_MIN_CLEAN_PERCENT
        || clean_bytes * 2 < bytes.len()
    {
        return None;
    }
    let mut text = String::with_capacity(bytes.len());
    let mut binary_lines = 0;
    for (k, l) in bytes.split(|&b| b == b'\n').enumerate() {
        if k > 0 {
            text.push('\n');
        }
        match clean_line(l) {
            Some(s) => text.push_str(s),
            None => {
                binary_lines += 1;
                text.push_str(&format!("[{} bytes of binary data]", l.len()));
            }
        }
    }
    Some(Decoded {
        text: Cow::Owned(text),
        encoding: UTF_8,
        invalid: 0,
        nuls: 0,
        binary_lines,
    })
}

/// True when `infer` knows the magic bytes and they cannot begin a text: the first byte is
/// non-ASCII (PNG, JPEG) or one of the first [`MAGIC_PEEK_BYTES`] is a control byte other than
/// TAB/LF/CR (gzip, ELF, ZIP, EXE). `infer` also matches two printable letters (`BC` as LLVM
/// bitcode, `BM` as BMP, `MZ` as EXE, `ID3` as MP3), which legacy text can begin with; those
/// files are left to the text rules, which their binary bodies fail.
fn strong_magic(bytes: &[u8]) -> bool {
    let head = &bytes[..bytes.len().min(MAGIC_PEEK_BYTES)];
    super::binary::sniff(bytes).is_some()
        && (head.first().is_some_and(|&b| b >= 0x80)
            || head
                .iter()
                .any(|&b| (b < 0x20 && !matches!(b, b'\t' | b'\n' | b'\r')) || b == 0x7f))
}

/// True when `odd` control chars among `chars` are few enough for a text: one, or at most
/// [`MAX_CONTROL_PERCENT`] %.
fn few_controls(odd: usize, chars: usize) -> bool {
    odd <= 1 || odd * 100 <= chars * MAX_CONTROL_PERCENT
}

/// True when `c` is a control char a text should not hold (see [`MAX_CONTROL_PERCENT`]).
fn is_odd_char(c: char) -> bool {
    match c {
        '\0' => false,
        '\u{01}'..='\u{1f}' => !matches!(
            c,
            '\t' | '\n'
                | '\u{0b}'
                | '\u{0c}'
                | '\r'
                | '\u{07}'
                | '\u{08}'
                | '\u{0e}'
                | '\u{0f}'
                | '\u{1b}'
        ),
        '\u{80}'..='\u{9f}' | '\u{e000}'..='\u{f8ff}' | '\u{fffe}' | '\u{ffff}' => true,
        _ => false,
    }
}

/// Counts of the UTF-8 reading of some bytes.
#[derive(Debug, Default)]
struct Utf8Stats {
    /// Maximal invalid subsequences (each one U+FFFD), a character cut off at the end excluded.
    invalid_seqs: usize,
    /// Bytes in them.
    invalid_bytes: usize,
    /// Valid characters of two or more bytes.
    multibyte: usize,
    /// NUL bytes.
    nuls: usize,
    /// Odd control bytes ([`is_odd_char`], C0 only).
    controls: usize,
}

impl Utf8Stats {
    fn of(bytes: &[u8]) -> Self {
        let mut st = Utf8Stats::default();
        let mut chunks = bytes.utf8_chunks().peekable();
        while let Some(chunk) = chunks.next() {
            for &b in chunk.valid().as_bytes() {
                match b {
                    0 => st.nuls += 1,
                    0xc0.. => st.multibyte += 1,
                    0x01..=0x1f if is_odd_char(char::from(b)) => st.controls += 1,
                    _ => {}
                }
            }
            let bad = chunk.invalid();
            let cut_off_at_end = chunks.peek().is_none()
                && std::str::from_utf8(bad).is_err_and(|e| e.error_len().is_none());
            if !bad.is_empty() && !cut_off_at_end {
                st.invalid_seqs += 1;
                st.invalid_bytes += bad.len();
            }
        }
        st
    }
}

/// `bytes` as UTF-8 with each invalid sequence as U+FFFD and each NUL as [`NUL_MARK`], whatever
/// they are (for binary content kept inline on request).
pub fn lossy(bytes: &[u8]) -> Decoded<'_> {
    if !bytes.contains(&0) {
        if let Ok(s) = std::str::from_utf8(bytes) {
            return Decoded {
                text: Cow::Borrowed(s),
                encoding: UTF_8,
                invalid: 0,
                nuls: 0,
                binary_lines: 0,
            };
        }
    }
    utf8_lossy(bytes)
}

/// UTF-8 with each invalid sequence as U+FFFD and each NUL as [`NUL_MARK`].
fn utf8_lossy(bytes: &[u8]) -> Decoded<'_> {
    let mut text = String::with_capacity(bytes.len() + 16);
    let (mut invalid, mut nuls) = (0, 0);
    for chunk in bytes.utf8_chunks() {
        let v = chunk.valid();
        let n = memchr::memchr_iter(0, v.as_bytes()).count();
        if n == 0 {
            text.push_str(v);
        } else {
            nuls += n;
            text.extend(v.chars().map(|c| if c == '\0' { NUL_MARK } else { c }));
        }
        if !chunk.invalid().is_empty() {
            invalid += 1;
            text.push('\u{FFFD}');
        }
    }
    Decoded {
        text: Cow::Owned(text),
        encoding: UTF_8,
        invalid,
        nuls,
        binary_lines: 0,
    }
}

/// Fewest entries of a NUL-separated list read as text whatever its share of NULs
/// ([`nul_separated`]): `abc\0` is one string, not a list.
const MIN_NUL_ENTRIES: usize = 2;

/// True for a list of entries each ended (or separated) by one NUL: at least
/// [`MIN_NUL_ENTRIES`] NULs, none first and none right after another.
fn nul_separated(bytes: &[u8]) -> bool {
    bytes.first().is_some_and(|&b| b != 0)
        && memchr::memchr_iter(0, bytes).count() >= MIN_NUL_ENTRIES
        && !bytes.windows(2).any(|w| w == [0, 0])
}

/// UTF-16LE or BE when the NUL bytes fall on one side of the code units (see rule 4).
fn utf16_by_nuls(bytes: &[u8]) -> Option<&'static Encoding> {
    let units = bytes.len() / 2;
    if units < UTF16_MIN_UNITS {
        return None;
    }
    let (mut even, mut odd) = (0usize, 0usize);
    for u in bytes.chunks_exact(2) {
        even += usize::from(u[0] == 0);
        odd += usize::from(u[1] == 0);
    }
    let side = |first: usize, other: usize| {
        first >= UTF16_MIN_NULS
            && first * UTF16_NUL_UNIT_DIVISOR >= units
            && other * UTF16_OTHER_SIDE_DIVISOR <= first
    };
    if side(odd, even) {
        Some(UTF_16LE)
    } else if side(even, odd) {
        Some(UTF_16BE)
    } else {
        None
    }
}

/// Decodes `bytes` (without BOM) in `enc` and returns the text when [`plausible`].
fn decode_with(enc: &'static Encoding, bytes: &[u8]) -> Option<Decoded<'static>> {
    let (text, _) = enc.decode_without_bom_handling(bytes);
    let verdict = plausible(&text, enc)?;
    let nuls = verdict.nuls;
    let text = if nuls > 0 {
        text.chars()
            .map(|c| if c == '\0' { NUL_MARK } else { c })
            .collect()
    } else {
        text.into_owned()
    };
    Some(Decoded {
        text: Cow::Owned(text),
        encoding: enc,
        invalid: verdict.errors,
        nuls,
        binary_lines: 0,
    })
}

/// Counts of a plausible decoded text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Verdict {
    /// U+FFFD chars (decode errors).
    pub errors: usize,
    /// NUL chars.
    pub nuls: usize,
}

/// Whether `text`, decoded from `enc`, reads as text: at most one char in
/// [`MAX_ERROR_DIVISOR`] (plus one) U+FFFD, at most one in [`MAX_NUL_DIVISOR`] NUL, at most
/// [`MAX_CONTROL_PERCENT`] % odd controls, and for single-byte encodings no run of
/// [`LATIN_RUN_LIMIT`] chars in U+0080-U+024F. `None` when it does not.
pub fn plausible(text: &str, enc: &'static Encoding) -> Option<Verdict> {
    let (mut chars, mut errors, mut nuls, mut odd, mut run) = (0usize, 0, 0, 0, 0);
    let latin = enc.is_single_byte();
    for c in text.chars() {
        chars += 1;
        match c {
            '\u{FFFD}' => errors += 1,
            '\0' => nuls += 1,
            c if is_odd_char(c) => odd += 1,
            _ => {}
        }
        if latin {
            if ('\u{80}'..='\u{24f}').contains(&c) {
                run += 1;
                if run >= LATIN_RUN_LIMIT {
                    return None;
                }
            } else {
                run = 0;
            }
        }
    }
    (errors <= 1 + chars / MAX_ERROR_DIVISOR
        && nuls * MAX_NUL_DIVISOR <= chars
        && few_controls(odd, chars))
    .then_some(Verdict { errors, nuls })
}

/// Rule 7: `chardetng`'s guess, else the first CJK encoding with the fewest errors, when its
/// decode is plausible and has fewer errors than the `utf8_invalid` bad UTF-8 sequences.
fn legacy(bytes: &[u8], utf8_invalid: usize) -> Option<Decoded<'static>> {
    let start = bytes
        .iter()
        .position(|b| !b.is_ascii())
        .unwrap_or(0)
        .saturating_sub(64);
    let sample = &bytes[start..bytes.len().min(start + DETECT_BYTES)];
    let mut det = EncodingDetector::new(Iso2022JpDetection::Deny);
    // Never `last = true`: a character cut off at the end must not disqualify the encoding.
    det.feed(sample, false);
    let guess = det.guess(None, Utf8Detection::Deny);
    let better = |d: Decoded<'static>| {
        (d.invalid < utf8_invalid && script_fits(&d.text, d.encoding) && clean_enough(&d))
            .then_some(d)
    };
    if let Some(d) = decode_with(guess, bytes).and_then(better) {
        return Some(d);
    }
    CJK.iter()
        .filter(|&&e| e != guess)
        .filter_map(|&e| decode_with(e, bytes).and_then(better))
        .min_by_key(|d| d.invalid)
}

/// A legacy decode has at most one error per [`LEGACY_CHARS_PER_ERROR`] non-ASCII characters
/// it reads: text in that encoding decodes nearly clean, while UTF-8 with damaged bytes read as
/// GBK gives a few ideographs per error (live set of session 51: `ctest -V` over json-c's
/// tests, whose inputs hold deliberately invalid UTF-8 beside `𝄞` and `世界`, read as GBK with
/// 12 errors among 76 ideographs).
fn clean_enough(d: &Decoded<'_>) -> bool {
    let chars = d
        .text
        .chars()
        .filter(|&c| !c.is_ascii() && c != '\u{FFFD}')
        .count();
    d.invalid * LEGACY_CHARS_PER_ERROR <= chars
}

/// See [`clean_enough`]: one error in 20 characters is a damaged text in that encoding; one in
/// six, the json-c case, is another encoding read as it.
const LEGACY_CHARS_PER_ERROR: usize = 20;

/// Whether the scripts in a CJK decode fit its encoding's language: Japanese text read as
/// Shift_JIS or EUC-JP holds kana (particles such as の, は, が are in nearly every sentence),
/// Korean text read as EUC-KR holds more Hangul than Hanja. Chinese bytes read in a Japanese or
/// Korean encoding give kanji without kana, or more Hanja than Hangul: the classic misreadings
/// of short GBK text. Texts with fewer than [`SCRIPT_MIN_IDEOGRAPHS`] ideographs always fit.
fn script_fits(text: &str, enc: &'static Encoding) -> bool {
    let (mut ideographs, mut kana, mut hangul) = (0usize, 0usize, 0usize);
    for c in text.chars() {
        match c {
            '\u{3040}'..='\u{30ff}' | '\u{ff66}'..='\u{ff9f}' => kana += 1,
            '\u{ac00}'..='\u{d7a3}' | '\u{1100}'..='\u{11ff}' | '\u{3130}'..='\u{318f}' => {
                hangul += 1
            }
            '\u{3400}'..='\u{4dbf}' | '\u{4e00}'..='\u{9fff}' | '\u{f900}'..='\u{faff}' => {
                ideographs += 1
            }
            _ => {}
        }
    }
    if ideographs < SCRIPT_MIN_IDEOGRAPHS {
        return true;
    }
    if enc == SHIFT_JIS || enc == EUC_JP {
        kana > 0
    } else if enc == EUC_KR {
        hangul >= ideographs
    } else {
        true
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod decode_prop {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Any bytes: no panic; exact text is the input; a decoded text is never empty for a
        /// non-empty input.
        #[test]
        fn arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..4096)) {
            if let Some(d) = decode(&bytes) {
                if d.is_exact() {
                    prop_assert_eq!(d.text.as_bytes(), &bytes[..]);
                } else {
                    prop_assert!(d.label().is_some());
                    prop_assert!(!d.describe().is_empty() || d.encoding != UTF_8);
                }
                prop_assert_eq!(bytes.is_empty(), d.text.is_empty());
            }
        }

        /// Valid text in the supported encodings decodes back to itself: ASCII words (a log's
        /// timestamps, paths, numbers) around 6-12 words of the language.
        #[test]
        fn encoded_text_round_trips(
            head in "[a-zA-Z0-9 .,:;/\n]{0,40}",
            picks in proptest::collection::vec(0usize..8, 6..16),
            tail in "[a-z0-9 .\n]{0,40}",
            which in 0usize..7,
        ) {
            const WORDS: [[&str; 8]; 5] = [
                ["错误", "文件", "路径", "重试", "失败", "用户", "登录", "，"],
                ["エラー", "ファイル", "が", "見つかりません", "の", "設定", "を", "。"],
                ["오류가", "파일을", "찾을", "수", "없습니다", "경로를", "확인하십시오", "발생했습니다"],
                ["錯誤", "檔案", "路徑", "請", "檢查", "後", "重試", "，"],
                ["résumé", "été", "über", "größe", "ça", "déjà", "naïve", " "],
            ];
            let (e, words) = match which {
                0 | 5 | 6 => (GBK, &WORDS[0]),
                1 => (SHIFT_JIS, &WORDS[1]),
                2 => (EUC_KR, &WORDS[2]),
                3 => (BIG5, &WORDS[3]),
                _ => (encoding_rs::WINDOWS_1252, &WORDS[4]),
            };
            // Korean and Latin text separate words with spaces; the others need none.
            let sep = if matches!(which, 2 | 4) { " " } else { "" };
            let body = picks.iter().map(|&i| words[i]).collect::<Vec<_>>().join(sep);
            let s = format!("{head}{body}{tail}");
            let (e, b) = match which {
                5 => (UTF_16LE, {
                    let mut v = vec![0xff, 0xfe];
                    v.extend(s.encode_utf16().flat_map(u16::to_le_bytes));
                    v
                }),
                6 => (UTF_8, s.clone().into_bytes()),
                _ => (e, e.encode(&s).0.into_owned()),
            };
            // Never binary; the text is the source's whenever the encoding was found, and the
            // encoding is always found for GBK (CP936), UTF-16 and UTF-8. Which of several legacy
            // encodings a short word salad is in can be ambiguous (six kana read as Cyrillic);
            // the unit tests check real sentences of each.
            let d = decode(&b).expect("text");
            if d.encoding == e || matches!(which, 0 | 5 | 6) {
                prop_assert_eq!(d.text.as_ref(), s.as_str(), "{}", e.name());
                prop_assert_eq!(d.encoding, e);
            }
        }
    }
}
