//! `kubectl describe` pages: `Key:  value` lines at column 0, indented sub-sections
//! (containers, conditions, resources) and small aligned tables (Conditions, Events, pods,
//! allocated resources).
//!
//! The facts an agent asks a describe page for are few and scattered: the object's identity
//! (Name, Namespace, Status), its conditions, each container's state, reason, exit code and
//! restart count, resource allocations, and the Warning events. They are kept verbatim with
//! their `L<n>` anchors; lines that signal trouble (a condition not in its healthy state, a
//! waiting or terminated container, a non-zero exit code, restarts, a Warning event) go to the
//! Errors section; the other lines are ranked against the intent.

use std::sync::LazyLock;

use regex::Regex;

use super::rank::bm25;
use super::text::normalise;
use super::{derived, fmt_num, show_line, Ctx, Item, Kind, Reduction, Section, MUST};

/// A top-level `Key:  value` line (value may be empty: a section header such as `Events:`).
static TOP_KEY: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^([A-Z][A-Za-z0-9 ./()-]{0,40}):(?:\s+(.*))?$").unwrap());
/// An indented `Key:  value` line inside a section.
static SUB_KEY: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^(\s+)([A-Za-z][A-Za-z0-9 ._/-]{0,40}):(?:\s+(.*))?$").unwrap());

/// Top-level keys that identify the object or state its health: always shown.
const IDENTITY_KEYS: &[&str] = &[
    "Name",
    "Namespace",
    "Kind",
    "Status",
    "Reason",
    "Message",
    "Node",
    "Controlled By",
    "Taints",
    "Unschedulable",
    "Replicas",
    "Pods Status",
    "Type",
];

/// Indented keys of a container (or init container) block worth showing.
const CONTAINER_KEYS: &[&str] = &[
    "State",
    "Last State",
    "Reason",
    "Exit Code",
    "Signal",
    "Restart Count",
    "Ready",
    "Message",
];

/// Reasons that mean a container or pod is in trouble.
const BAD_REASONS: &[&str] = &[
    "CrashLoopBackOff",
    "Error",
    "OOMKilled",
    "ImagePullBackOff",
    "ErrImagePull",
    "CreateContainerConfigError",
    "CreateContainerError",
    "InvalidImageName",
    "ContainerCannotRun",
    "DeadlineExceeded",
    "Evicted",
    "BackOff",
    "FailedScheduling",
    "Unhealthy",
];

/// Most Warning events shown one by one.
const MAX_WARNINGS: usize = 20;

/// True when the nonblank lines look like a `kubectl describe` page: the first is `Name:  x`
/// and most of the first 40 unindented lines are `Key:` lines.
pub fn looks_like_describe(nonblank: &[&str]) -> bool {
    let Some(first) = nonblank.first() else {
        return false;
    };
    if !(first.starts_with("Name:") && first.len() > 5) {
        return false;
    }
    let top: Vec<&&str> = nonblank
        .iter()
        .filter(|l| !l.starts_with([' ', '\t']))
        .take(40)
        .collect();
    let keyed = top.iter().filter(|l| TOP_KEY.is_match(l)).count();
    // `pip show` and `dpkg -s` pages are `Name:` and `Key:` lines too; a Kubernetes object
    // has labels, annotations, a namespace or a creation time.
    let kubernetes = top.iter().any(|l| {
        KUBERNETES_KEYS
            .iter()
            .any(|k| l.strip_prefix(k).is_some_and(|r| r.starts_with(':')))
    });
    keyed >= 4 && keyed * 10 >= top.len() * 8 && kubernetes
}

/// Keys of every `kubectl describe` page (pods, nodes, deployments, services…), at least one
/// of which [`looks_like_describe`] needs among the top-level lines.
const KUBERNETES_KEYS: &[&str] = &[
    "Namespace",
    "Labels",
    "Annotations",
    "CreationTimestamp",
    "Events",
];

/// True for the dashes line under a table header (`----  ------`).
fn is_rule(line: &str) -> bool {
    let t = line.trim();
    t.len() >= 2 && t.contains('-') && t.chars().all(|c| c == '-' || c == ' ')
}

/// True when a condition row (`Type  Status  ...`) is not in its healthy state: `Ready`-like
/// types should be True, pressure/unavailable types False.
fn bad_condition(ty: &str, status: &str) -> bool {
    let negative = ty.ends_with("Pressure")
        || ty.ends_with("Unavailable")
        || ty == "ReplicaFailure"
        || ty.contains("Failed");
    match status {
        "True" => negative,
        "False" => !negative,
        "Unknown" => true,
        _ => false,
    }
}

/// One row of a table inside a section.
struct Row {
    /// 0-based line index.
    line: usize,
    /// The section (top-level key) the table is in.
    section: String,
}

/// Reduces a describe page; `None` when it is not one after all.
pub fn reduce(text: &str, ctx: &Ctx<'_>) -> Option<Reduction> {
    let lines: Vec<&str> = text.split('\n').collect();
    let n_lines = lines.len() - usize::from(text.ends_with('\n'));
    let lines = &lines[..n_lines];
    let mut items: Vec<Item> = Vec::new();
    let mut seq = 0;
    items.push(Item::fact(
        {
            seq += 1;
            seq
        },
        format!(
            "kind: kubectl describe; {} lines, {} bytes",
            fmt_num(n_lines),
            fmt_num(ctx.size(text))
        ),
        MUST,
    ));

    let mut section = String::new();
    let mut names: Vec<(usize, String)> = Vec::new();
    let mut identity: Vec<(String, String)> = Vec::new();
    let mut rows: Vec<Row> = Vec::new();
    let mut in_table = false;
    let mut container: Option<usize> = None;
    let mut trouble: Vec<String> = Vec::new();
    let mut warnings: Vec<usize> = Vec::new();
    let mut events_none = None;
    let mut ready_condition: Option<String> = None;
    for (i, &l) in lines.iter().enumerate() {
        if l.trim().is_empty() {
            in_table = false;
            continue;
        }
        if !l.starts_with([' ', '\t']) {
            in_table = false;
            container = None;
            if let Some(c) = TOP_KEY.captures(l) {
                section = c[1].to_string();
                let value = c.get(2).map_or("", |m| m.as_str().trim());
                if section == "Name" && !value.is_empty() {
                    names.push((i, value.to_string()));
                }
                if section == "Events" && value == "<none>" {
                    events_none = Some(i);
                }
                if IDENTITY_KEYS.contains(&section.as_str()) && !value.is_empty() {
                    identity.push((section.clone(), value.to_string()));
                    items.push(Item {
                        section: Section::KeyFacts,
                        order: 10 + i,
                        line: Some(i + 1),
                        text: show_line(l.trim()),
                        prio: MUST / 10.0 - i as f64 * 1e-3,
                    });
                }
            }
            continue;
        }
        // Indented: a table header/rule/row, a container block, or a sub key.
        if is_rule(l) {
            in_table = true;
            if i > 0 {
                items.push(Item::line(
                    Section::Evidence,
                    i,
                    show_line(lines[i - 1]),
                    40.0,
                ));
            }
            continue;
        }
        if in_table {
            rows.push(Row {
                line: i,
                section: section.clone(),
            });
            continue;
        }
        let indent = l.len() - l.trim_start().len();
        if section.ends_with("Containers") && indent == 2 && l.trim_end().ends_with(':') {
            container = Some(i);
            items.push(Item::line(Section::Evidence, i + 1, show_line(l), 70.0));
            continue;
        }
        if let Some(c) = SUB_KEY.captures(l) {
            let key = c[2].trim();
            let value = c.get(3).map_or("", |m| m.as_str().trim());
            if container.is_some() && CONTAINER_KEYS.contains(&key) {
                let bad = match key {
                    "State" | "Last State" => matches!(value, "Waiting" | "Terminated"),
                    "Reason" => BAD_REASONS.contains(&value),
                    "Exit Code" => value != "0",
                    "Restart Count" => value != "0",
                    "Ready" => value == "False",
                    "Signal" => true,
                    _ => false,
                };
                if bad {
                    // A state is implied by its reason; the Status names the reason.
                    if !key.ends_with("State") {
                        trouble.push(format!("{key} {value}"));
                    }
                    items.push(Item::line(Section::Errors, i + 1, show_line(l), 120.0));
                    if let Some(h) = container {
                        items.push(Item::line(
                            Section::Errors,
                            h + 1,
                            show_line(lines[h]),
                            119.0,
                        ));
                    }
                } else {
                    items.push(Item::line(Section::Evidence, i + 1, show_line(l), 55.0));
                }
            }
        }
    }

    // Table rows: conditions and events are judged; small tables are shown whole; big ones
    // (a node's pods) by their match with the intent.
    let docs: Vec<&str> = rows.iter().map(|r| lines[r.line]).collect();
    let scores = normalise(&bm25(ctx.query, &docs));
    let mut per_section: std::collections::HashMap<&str, usize> = Default::default();
    for r in &rows {
        *per_section.entry(r.section.as_str()).or_default() += 1;
    }
    for (k, r) in rows.iter().enumerate() {
        let l = lines[r.line];
        let f: Vec<&str> = l.split_whitespace().collect();
        let s = scores[k];
        let ranked = 5.0 + if s >= 0.3 { 110.0 * s } else { 60.0 * s };
        match r.section.as_str() {
            "Conditions" if f.len() >= 2 => {
                if f[0] == "Ready" {
                    let reason = f.iter().rev().find(|w| w.starts_with(char::is_uppercase));
                    ready_condition = Some(match (f.len() > 2, reason) {
                        (true, Some(reason)) if !["True", "False"].contains(reason) => {
                            format!("Ready {} ({reason}, L{})", f[1], r.line + 1)
                        }
                        _ => format!("Ready {} (L{})", f[1], r.line + 1),
                    });
                }
                if bad_condition(f[0], f[1]) {
                    // The Ready condition has its own place in the Status.
                    if f[0] != "Ready" {
                        trouble.push(format!("condition {} {}", f[0], f[1]));
                    }
                    items.push(Item::line(Section::Errors, r.line + 1, show_line(l), 125.0));
                } else {
                    items.push(Item::line(
                        Section::Evidence,
                        r.line + 1,
                        show_line(l),
                        65.0,
                    ));
                }
            }
            "Events" => {
                if f.first() == Some(&"Warning") {
                    warnings.push(r.line);
                    let p = 130.0 - warnings.len() as f64 * 0.1;
                    if warnings.len() <= MAX_WARNINGS {
                        items.push(Item::line(Section::Errors, r.line + 1, show_line(l), p));
                    }
                } else {
                    items.push(Item::line(
                        Section::Evidence,
                        r.line + 1,
                        show_line(l),
                        20.0 + s * 40.0,
                    ));
                }
            }
            sec => {
                let small = per_section.get(sec).copied().unwrap_or(0) <= 8;
                let p = if small { ranked.max(60.0) } else { ranked };
                items.push(Item::line(Section::Evidence, r.line + 1, show_line(l), p));
            }
        }
    }
    if let Some(i) = events_none {
        items.push(Item::fact(
            {
                seq += 1;
                seq
            },
            format!("events: none (L{})", i + 1),
            MUST,
        ));
    } else if !warnings.is_empty() {
        items.push(Item::fact(
            {
                seq += 1;
                seq
            },
            format!("Warning events: {}", derived(warnings.len(), 0, "")),
            MUST,
        ));
    }
    // Other lines that match the intent.
    let all: Vec<&str> = lines.iter().map(|l| super::clip_str(l, 600)).collect();
    let line_scores = normalise(&bm25(ctx.query, &all));
    for (i, s) in line_scores.iter().enumerate() {
        if *s > 0.3 {
            items.push(Item::line(
                Section::Evidence,
                i + 1,
                show_line(lines[i]),
                8.0 + 30.0 * s,
            ));
        }
    }

    let ident = |k: &str| {
        identity
            .iter()
            .find(|(key, _)| key == k)
            .map(|(_, v)| v.as_str())
    };
    let mut status = String::from("kubectl describe");
    match names.as_slice() {
        [] => {}
        [(_, n)] => status.push_str(&format!(" of {n}")),
        [(_, n), ..] => status.push_str(&format!(
            " of {} objects, first {n}",
            derived(names.len(), 0, "")
        )),
    }
    if let Some(ns) = ident("Namespace") {
        status.push_str(&format!(" (namespace {ns})"));
    }
    if let Some(st) = ident("Status") {
        status.push_str(&format!("; Status: {st}"));
    }
    if let Some(r) = &ready_condition {
        status.push_str(&format!("; {r}"));
    }
    if trouble.is_empty() {
        status.push_str("; no condition, container state or event flags trouble");
    } else {
        trouble.dedup();
        let shown: Vec<&str> = trouble.iter().take(8).map(String::as_str).collect();
        status.push_str(&format!("; trouble: {}", shown.join(", ")));
    }
    if !warnings.is_empty() {
        status.push_str(&format!(
            "; Warning events: {}",
            derived(warnings.len(), 0, "")
        ));
    }
    status.push('.');
    let failed = if trouble.is_empty() && warnings.is_empty() {
        None
    } else {
        Some(true)
    };
    let next_action = match (warnings.first(), events_none) {
        (Some(&w), _) => format!(
            "Read the Events from L{} of the saved file (first Warning event).",
            w + 1
        ),
        _ => "Search the saved file for the section you need (Conditions, Containers, Allocated resources, Events).".to_string(),
    };
    Some(Reduction {
        kind: Kind::Describe,
        items,
        status,
        failed,
        next_action,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::guard::reduce::rank::Query;
    use crate::guard::reduce::{detect, Section};

    fn corpus(name: &str) -> String {
        String::from_utf8(crate::guard::test_corpus(name)).unwrap()
    }

    fn run(text: &str, intent: &str) -> Reduction {
        let q = Query::new(intent);
        reduce(
            text,
            &Ctx {
                query: &q,
                exit_code: None,
                bytes: 0,
            },
        )
        .expect("a describe page")
    }

    /// Everything the reduction can show: Status plus every item.
    fn shown(r: &Reduction) -> String {
        let mut s = r.status.clone();
        for it in &r.items {
            s.push('\n');
            s.push_str(&it.render());
        }
        s.split_whitespace().collect::<Vec<_>>().join(" ")
    }

    #[test]
    fn node_page_keeps_identity_conditions_and_allocations() {
        let text = corpus("kubectl_02.txt");
        assert_eq!(detect(&text), Kind::Describe);
        let r = run(
            &text,
            "is the node healthy and how much CPU/memory is allocated; what limits does frontend-service have?",
        );
        // The manifest's must_keep facts, each high enough to survive packing.
        assert!(r.status.contains("kind-double-node-worker"), "{}", r.status);
        assert!(r.status.contains("KubeletReady"), "{}", r.status);
        assert_eq!(r.failed, None, "a healthy node: {}", r.status);
        let top = |needle: &str, min: f64| {
            assert!(
                r.items
                    .iter()
                    .any(|i| i.text.contains(needle) && i.prio >= min),
                "{needle} not kept at prio >= {min}"
            );
        };
        top("5039m (15%)", 60.0);
        top("25181Mi (26%)", 60.0);
        top("frontend-service", 60.0);
        top("MemoryPressure", 60.0);
        assert!(shown(&r).contains("events: none"));
        assert!(!r.items.iter().any(|i| i.section == Section::Errors));
    }

    const POD: &str = "Name:             api-7d9f8c4b-xk2p9
Namespace:        shop
Node:             worker-1/10.0.0.7
Status:           Running
IP:               10.244.1.12
Containers:
  api:
    Image:          shop/api:1.4.2
    State:          Waiting
      Reason:       CrashLoopBackOff
    Last State:     Terminated
      Reason:       Error
      Exit Code:    137
    Ready:          False
    Restart Count:  42
    Limits:
      memory:  256Mi
  sidecar:
    State:          Running
    Ready:          True
    Restart Count:  0
Conditions:
  Type              Status
  ----              ------
  Initialized       True
  Ready             False
  ContainersReady   False
  PodScheduled      True
Events:
  Type     Reason     Age                  From     Message
  ----     ------     ----                 ----     -------
  Normal   Pulled     5m (x40 over 3h)     kubelet  Container image already present on machine
  Warning  BackOff    2m (x800 over 3h)    kubelet  Back-off restarting failed container api in pod api-7d9f8c4b-xk2p9
";

    #[test]
    fn pod_page_flags_crash_loop_exit_code_restarts_and_warnings() {
        assert_eq!(detect(POD), Kind::Describe);
        let r = run(POD, "why does the api pod keep restarting?");
        assert_eq!(r.failed, Some(true));
        for want in [
            "api-7d9f8c4b-xk2p9",
            "namespace shop",
            "Status: Running",
            "Ready False",
            "Reason CrashLoopBackOff",
            "Exit Code 137",
            "Restart Count 42",
            "Warning events: 1",
        ] {
            assert!(r.status.contains(want), "{want} not in {}", r.status);
        }
        let errors: Vec<&str> = r
            .items
            .iter()
            .filter(|i| i.section == Section::Errors)
            .map(|i| i.text.as_str())
            .collect();
        for want in [
            "CrashLoopBackOff",
            "Exit Code:  137",
            "Restart Count:  42",
            "Warning  BackOff",
            "api:",
        ] {
            assert!(
                errors.iter().any(|e| e.contains(want)),
                "{want} not in {errors:?}"
            );
        }
        // The healthy sidecar is not an error.
        assert!(!errors.iter().any(|e| e.contains("sidecar")), "{errors:?}");
        assert!(r.next_action.contains("L33"), "{}", r.next_action);
    }

    #[test]
    fn plain_key_value_text_is_not_a_describe_page() {
        assert_ne!(
            detect("Name: x\nsome prose here\nmore prose\n"),
            Kind::Describe
        );
        assert!(!looks_like_describe(&["hello", "Name: x"]));
    }

    #[test]
    fn a_pip_show_page_is_not_a_describe_page() {
        let pip = [
            "Name: botocore",
            "Version: 1.43.11",
            "Summary: Low-level, data-driven core of boto 3.",
            "Home-page: https://github.com/boto/botocore",
            "License: Apache-2.0",
            "Requires: jmespath, python-dateutil, urllib3",
            "Files:",
            "  botocore/__init__.py",
        ];
        assert!(!looks_like_describe(&pip));
        let pod = [
            "Name:         web-0",
            "Namespace:    default",
            "Priority:     0",
            "Node:         node-1/10.0.0.1",
            "Status:       Running",
            "IP:           10.1.0.7",
        ];
        assert!(looks_like_describe(&pod));
    }
}
