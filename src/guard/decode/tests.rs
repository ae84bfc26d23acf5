//! Unit tests of [`super`]: which encoding, and the text handed on.

use super::*;

fn enc(e: &'static Encoding, s: &str) -> Vec<u8> {
    let (b, used, bad) = e.encode(s);
    assert_eq!(
        (used, bad),
        (e, false),
        "{s:?} not encodable in {}",
        e.name()
    );
    b.into_owned()
}

fn utf16(s: &str, le: bool, bom: bool) -> Vec<u8> {
    let mut out = Vec::new();
    if bom {
        out.extend_from_slice(if le { &[0xff, 0xfe] } else { &[0xfe, 0xff] });
    }
    for u in s.encode_utf16() {
        out.extend_from_slice(&if le { u.to_le_bytes() } else { u.to_be_bytes() });
    }
    out
}

#[track_caller]
fn text_of(bytes: &[u8]) -> Decoded<'_> {
    decode(bytes).unwrap_or_else(|| panic!("binary: {bytes:?}"))
}

const BANNER: &str =
    "Microsoft Windows [版本 10.0.19045.3570]\r\n(c) Microsoft Corporation。保留所有权利。\r\n";

#[test]
fn a_legacy_decode_with_an_error_per_few_characters_is_not_taken() {
    // GBK text with one damaged byte among its ideographs: GBK.
    let mut gbk = enc(GBK, &"错误：找不到文件，请检查路径后重试。\n".repeat(200));
    gbk.insert(20, 0xff);
    let d = decode_with(GBK, &gbk).expect("plausible");
    assert!((1..=2).contains(&d.invalid), "{}", d.invalid);
    assert!(clean_enough(&d));
    // UTF-8 with deliberately invalid bytes beside `世界` (json-c's test inputs under
    // `ctest -V`) read as GBK: an error per few ideographs.
    let mut b = Vec::new();
    for _ in 0..12 {
        b.extend_from_slice("parse(\"世界 ".as_bytes());
        b.extend_from_slice(&[0xff, b'a', 0x80]);
        b.extend_from_slice(b"\") ... OK: got correct error: invalid utf-8 string\n");
    }
    b.extend_from_slice(b"100% tests passed\n".repeat(2000).as_slice());
    let d = decode_with(GBK, &b).expect("plausible");
    assert!(d.invalid >= 12, "{}", d.invalid);
    assert!(!clean_enough(&d));
}

#[test]
fn utf8_is_exact() {
    let s = "line one\n\x1b[31mred\x1b[0m\r\n日本語 \u{1F600}\n";
    let d = text_of(s.as_bytes());
    assert!(d.is_exact());
    assert!(matches!(d.text, Cow::Borrowed(_)));
    assert_eq!(d.label(), None);
    assert_eq!(d.describe(), "");
    assert!(text_of(b"").is_exact());
}

#[test]
fn cp936_console_banner() {
    let b = enc(GBK, BANNER);
    assert!(b.len() < 100, "{}", b.len());
    let d = text_of(&b);
    assert_eq!(d.text, BANNER);
    assert_eq!(d.label(), Some("GBK"));
    assert_eq!(d.describe(), "decoded from GBK");
}

#[test]
fn legacy_cjk_and_latin() {
    let cases: [(&'static Encoding, &str); 6] = [
        (
            GBK,
            "错误：找不到文件 C:\\项目\\配置.json\r\n请检查路径后重试。\r\n",
        ),
        (
            SHIFT_JIS,
            "エラー: ファイルが見つかりません: C:\\プロジェクト\\設定.json\r\n",
        ),
        (
            EUC_KR,
            "오류: 파일을 찾을 수 없습니다. 경로를 확인하십시오.\n",
        ),
        (BIG5, "錯誤：找不到檔案，請檢查路徑後重試。\r\n"),
        (
            encoding_rs::WINDOWS_1252,
            "Connexion refusée : le délai d'attente est dépassé. Réessayez après vérification.\r\n",
        ),
        (
            encoding_rs::WINDOWS_1252,
            "Größe der Datei überschreitet das Maximum; Änderungen wurden nicht übernommen.\n",
        ),
    ];
    for (e, s) in cases {
        let b = enc(e, s);
        let d = text_of(&b);
        assert_eq!((d.text.as_ref(), d.encoding), (s, e), "{}", e.name());
        assert_eq!(d.invalid, 0);
    }
}

#[test]
fn gb18030_four_byte_chars() {
    let s = "日志：用户 \u{1F600} 登录失败，原因：密码错误。重试次数 3。\n";
    let b = enc(encoding_rs::GB18030, s);
    let d = text_of(&b);
    assert_eq!(d.text, s);
}

#[test]
fn longer_legacy_text_and_truncated_end() {
    let s = "2024-05-01 10:00:01 错误：数据库连接失败，正在重试。\r\n".repeat(50);
    let mut b = enc(GBK, &s);
    let d = text_of(&b);
    assert_eq!((d.text.as_ref(), d.encoding), (s.as_str(), GBK));
    // Cut in the middle of a two-byte character.
    b.extend_from_slice(&enc(GBK, "错")[..1]);
    let d = text_of(&b);
    assert_eq!(d.encoding, GBK);
    assert_eq!(d.invalid, 1);
    assert!(d.text.ends_with('\u{FFFD}'));
}

#[test]
fn utf16_with_and_without_bom() {
    let s = "Name    Status\r\n----    ------\r\nsvc1    Running\r\n服务2   已停止\r\n";
    for le in [true, false] {
        for bom in [true, false] {
            let b = utf16(s, le, bom);
            let d = text_of(&b);
            let want = if le { UTF_16LE } else { UTF_16BE };
            assert_eq!(
                (d.text.as_ref(), d.encoding),
                (s, want),
                "le={le} bom={bom}"
            );
            assert!(d.describe().starts_with("decoded from UTF-16"));
        }
    }
    // A CJK-only UTF-16 text is found by its BOM.
    let b = utf16("全部测试已通过", true, true);
    assert_eq!(text_of(&b).text, "全部测试已通过");
}

#[test]
fn few_nuls_are_marked() {
    let mut b = b"$ ./tool --dump\nheader ok\n".to_vec();
    b.extend_from_slice(b"value=\0\0 end\nexit 0\n");
    let d = text_of(&b);
    assert_eq!(d.nuls, 2);
    assert_eq!(d.encoding, UTF_8);
    assert!(!d.is_exact());
    assert!(d.text.contains("value=\u{2400}\u{2400} end"), "{}", d.text);
    assert_eq!(d.describe(), "2 NUL bytes shown as \u{2400}");
    assert_eq!(d.label(), Some("UTF-8"));
    // NUL-separated list.
    let d = text_of(b"src/main.rs\0src/lib.rs\0Cargo.toml\0README.md\0");
    assert_eq!(d.nuls, 4);
    // NULs in a legacy text.
    let mut g = enc(GBK, BANNER);
    g.insert(10, 0);
    let d = text_of(&g);
    assert_eq!((d.encoding, d.nuls), (GBK, 1));
}

#[test]
fn utf8_with_few_bad_bytes_stays_utf8() {
    let mut b = b"a long enough line of ordinary log text ".repeat(10);
    b.push(0xff);
    let d = text_of(&b);
    assert_eq!((d.encoding, d.invalid), (UTF_8, 1));
    assert!(d.text.ends_with('\u{FFFD}'));
    assert_eq!(d.describe(), "1 invalid UTF-8 sequence shown as \u{FFFD}");
    // Many valid multi-byte chars and a damaged one.
    let mut b = "日本語のログ: 処理は正常に終了しました ✓\n"
        .repeat(5)
        .into_bytes();
    b.insert(7, 0xe6);
    b.insert(30, 0x80);
    let d = text_of(&b);
    assert_eq!((d.encoding, d.invalid), (UTF_8, 2));
    // Cut off mid-character at the end: UTF-8, one U+FFFD.
    let mut b = "résumé 日本".as_bytes().to_vec();
    b.pop();
    let d = text_of(&b);
    assert_eq!((d.encoding, d.invalid), (UTF_8, 1));
}

#[test]
fn binaries_stay_binary() {
    // A real PNG, a gzip stream, an ELF header, a WAV.
    assert!(decode(&crate::guard::binary::tests::png(8, 8)).is_none());
    let gz = [
        0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, 0xcb, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0, 0x86, 0xa6,
        0x10, 0x36, 5, 0, 0, 0,
    ];
    assert!(decode(&gz).is_none());
    let mut elf = b"\x7fELF\x02\x01\x01\0\0\0\0\0\0\0\0\0\x02\0\x3e\0\x01\0\0\0".to_vec();
    elf.extend(std::iter::repeat_n(0u8, 40));
    assert!(decode(&elf).is_none());
    assert!(decode(&crate::guard::binary::tests::wav(100)).is_none());
    // Pseudo-random bytes of several sizes, and only high bytes.
    let mut x = 0x2545_f491_4f6c_dd1du64;
    for n in [64usize, 256, 1_000, 10_000] {
        let rnd: Vec<u8> = (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x >> 24) as u8
            })
            .collect();
        assert!(decode(&rnd).is_none(), "random {n} bytes read as text");
    }
    let junk: Vec<u8> = (0..1000u32).map(|i| (i * 37 % 128 + 128) as u8).collect();
    assert!(decode(&junk).is_none(), "{:?}", decode(&junk));
    // Mostly NULs, and a short NUL-terminated string.
    assert!(decode(b"abc\0").is_none());
    // A short NUL-separated list is text (its NULs marked); one NUL is no UTF-16.
    for list in [&b"M\0a.rs\0"[..], b"a.rs\0b.rs\0"] {
        let d = decode(list).expect("a list of names is text");
        assert_eq!(d.encoding, UTF_8);
        assert!(d.text.contains("a.rs\u{2400}"), "{}", d.text);
    }
    let d = decode(b"ok\0done\n").expect("text with one NUL");
    assert_eq!(d.encoding, UTF_8);
    assert_eq!(d.text, "ok\u{2400}done\n");
    assert!(decode(&[0u8; 64]).is_none());
    // UTF-16-looking arrays of small numbers (controls) are not text.
    let nums: Vec<u8> = (0..200u16).flat_map(|i| (i % 32).to_le_bytes()).collect();
    assert!(decode(&nums).is_none());
}

/// A text with a binary file's lines among its own (`git diff --check` over a repository with
/// an `.ai` file) is text: its clean lines as they are, each binary line as a marker, line
/// numbers kept. Mostly binary bytes, or a known magic, stay binary.
#[test]
fn a_text_with_binary_lines_is_text() {
    let mut bytes = Vec::new();
    for k in 0..40 {
        bytes.extend_from_slice(format!("docs/a{k}.rst:{k}: trailing whitespace.\n").as_bytes());
    }
    // 255 bytes: a `+`, then every byte but NUL and LF.
    bytes.push(b'+');
    bytes.extend((1..=255u8).filter(|&b| b != b'\n'));
    bytes.push(b'\n');
    bytes.extend_from_slice(b"ext/logo.ai:3459: trailing whitespace.\n");
    let d = decode(&bytes).expect("text");
    let lines: Vec<&str> = d.text.split('\n').collect();
    assert_eq!(lines[40], "[255 bytes of binary data]");
    assert_eq!(lines[41], "ext/logo.ai:3459: trailing whitespace.");
    assert_eq!(d.binary_lines, 1);
    assert!(!d.is_exact());
    assert!(
        d.describe().contains("1 line of binary bytes"),
        "{}",
        d.describe()
    );
    // Half the lines binary: binary.
    let mut half = Vec::new();
    for _ in 0..20 {
        half.extend_from_slice(b"a line of text\n\x01\x02\x03\xff\xfe\x04\x05\n");
    }
    assert!(decode(&half).is_none());
    // A PNG's magic stays binary whatever follows.
    let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
    png.extend_from_slice(&bytes);
    assert!(decode(&png).is_none());
}
