//! Tests of the XML unit builder.

use crate::guard::reduce::units::{build, Unit, UnitKind};
use crate::guard::reduce::Kind;

#[test]
fn an_xml_element_that_occurs_once_on_a_one_line_document_is_a_record() {
    // Statistics written on one line: many <ctx> records, then one <summary> of totals.
    let ctxs: String = (0..20)
        .map(|i| format!("<ctx><id>0x{i:x}</id><inuse>{i}</inuse></ctx>"))
        .collect();
    let text = format!(
        "<?xml version=\"1.0\"?>\n<stats><server><worker-threads>4</worker-threads></server><contexts>{ctxs}</contexts><summary><TotalUse>11158402</TotalUse><InUse>4465424</InUse></summary></stats>\n"
    );
    let u = build(&text, Kind::Lines);
    let summary = u
        .units
        .iter()
        .find(|x| x.context.ends_with("summary"))
        .expect("the summary is a unit");
    assert_eq!(summary.line, 2);
    assert!(
        summary.pairs.iter().any(|p| p == "<InUse>4465424</InUse>"),
        "{:?}",
        summary.pairs
    );
    assert!(u.units.iter().any(|x| x
        .pairs
        .iter()
        .any(|p| p == "<worker-threads>4</worker-threads>")));
    // Records are not repeated as singletons.
    assert_eq!(
        u.units
            .iter()
            .filter(|x| x.context.ends_with("ctx"))
            .count(),
        20
    );
}

#[test]
fn an_xml_record_inside_another_says_whose_it_is() {
    // Ports inside hosts: a port is shown with its host's address.
    let mut text = String::from("<?xml version=\"1.0\"?>\n<nmaprun>\n");
    for h in 1..=3 {
        text.push_str(&format!(
            "<host><status state=\"up\"/>\n<address addr=\"10.0.0.{h}\" addrtype=\"ipv4\"/>\n<ports>\n"
        ));
        for p in [22, 80] {
            text.push_str(&format!(
                "<port protocol=\"tcp\" portid=\"{p}\"><state state=\"open\"/></port>\n"
            ));
        }
        text.push_str("</ports>\n</host>\n");
    }
    text.push_str("</nmaprun>\n");
    let u = build(&text, Kind::Lines);
    let ports: Vec<&Unit> = u
        .units
        .iter()
        .filter(|x| x.context.ends_with("/port"))
        .collect();
    assert_eq!(ports.len(), 6);
    assert_eq!(
        ports[0].parent,
        "<address addr=\"10.0.0.1\" addrtype=\"ipv4\"/>"
    );
    assert_eq!(
        ports[5].parent,
        "<address addr=\"10.0.0.3\" addrtype=\"ipv4\"/>"
    );
    // The outermost records say nothing of a parent.
    assert!(u
        .units
        .iter()
        .filter(|x| x.context.ends_with("/host"))
        .all(|x| x.parent.is_empty()));
}

/// A property list of access points, printed after the command that wrote it and cut short
/// at the end, as a scan's output is.
fn plist_scan() -> String {
    let mut text = String::from(
        "$ airport --scan --xml\n<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<plist version=\"1.0\">\n<array>\n",
    );
    for i in 0..4 {
        text.push_str(&format!(
            "\t<dict>\n\t\t<key>BSSID</key>\n\t\t<string>d8:47:32:af:ae:f{i}</string>\n\t\t<key>EXT_CAPS</key>\n\t\t<dict>\n\t\t\t<key>BSS_TRANS_MGMT</key>\n\t\t\t<integer>1</integer>\n\t\t</dict>\n\t\t<key>HIDDEN</key>\n\t\t<true/>\n\t\t<key>SSID</key>\n\t\t<data>\n\t\tVFAtTGlua19B\n\t\t</data>\n\t\t<key>SSID_STR</key>\n\t\t<string>net-{i}</string>\n\t</dict>\n"
        ));
    }
    text.push_str("\t<dict>\n\t\t<key>BSSID</key>\n\t\t<string>cut");
    text
}

/// A property list's `<key>` names the value after it: a dictionary's fields are its keys,
/// shown with their values; a key naming a nested dictionary names its path, not a field.
#[test]
fn a_property_list_dictionary_is_a_record_of_its_keys() {
    let u = build(&plist_scan(), Kind::Lines);
    let recs: Vec<&Unit> = u
        .units
        .iter()
        .filter(|x| x.kind == UnitKind::Record && x.context.ends_with("array/dict"))
        .collect();
    assert_eq!(recs.len(), 4, "{:#?}", u.units);
    let r = recs[2];
    assert_eq!(
        r.pairs,
        [
            "<key>BSSID</key> <string>d8:47:32:af:ae:f2</string>",
            "<key>HIDDEN</key> <true/>",
            "<key>SSID</key> <data> VFAtTGlua19B </data>",
            "<key>SSID_STR</key> <string>net-2</string>",
        ]
    );
    let names: Vec<&str> = r
        .fields
        .iter()
        .map(|f| u.fields[f.0].name.as_str())
        .collect();
    assert_eq!(names, ["BSSID", "HIDDEN", "SSID", "SSID_STR"]);
    assert_eq!(r.fields[1].1, "true");
    // The nested dictionaries are records at the path their key names.
    assert!(u.units.iter().any(|x| x.context.ends_with("dict/EXT_CAPS")
        && x.pairs == ["<key>BSS_TRANS_MGMT</key> <integer>1</integer>"]));
    // The command line before the declaration stays a line of its own.
    assert!(u
        .units
        .iter()
        .any(|x| x.line == 1 && x.text == "$ airport --scan --xml"));
}
