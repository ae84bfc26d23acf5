//! Real-model test of the model's part of a summary (issue 17, tier 3): on the small model,
//! greedy, the model reads the reduction, picks excerpts by number, and the result keeps the
//! fact the question is about, quotes every excerpt as the file has it, and states nothing
//! the output does not say.

use toolsum::backend::Narrator;
use toolsum::engine::{Engine, EngineOptions};
use toolsum::guard::{self, GuardRequest, Limits, ResultKind};
use toolsum::tokenizer::GgufTokenizer;

use crate::util::model_path;

/// A deploy tool's event log: long, all different (no template repeats, nothing rare), one
/// line says the database migration was rolled back, and no word of the question ("did the
/// schema change go through?") is in it.
fn deploy_log() -> String {
    let steps = [
        "resolved artifact registry.example.com/shop/api@sha256:4be1c0d2 for release r-2291",
        "uploaded bundle api-r-2291.tar.zst (48,211,904 bytes) to s3://deploy-artifacts/shop/api",
        "warmed 12 of 12 cache shards for tenant eu-west-2 in 4.2 s",
        "rendered 37 Kubernetes manifests from chart shop-api 7.4.1 with values prod-eu.yaml",
        "drained node ip-10-40-3-17 (14 pods evicted, 0 blocked by PodDisruptionBudget)",
        "health check /livez answered 200 on 9 of 9 replicas after 31 s",
        "feature flag checkout-v3 rollout moved from 10% to 25% for cohort beta",
        "migration 0187_add_invoice_currency: applied on primary, replicating to 2 standbys",
        "migration 0187_add_invoice_currency: lock wait exceeded 30 s on table invoices; transaction rolled back, schema left at 0186",
        "CDN purge of 1,204 paths under /static/api/ acknowledged by edge in 6.8 s",
        "rotated 3 service account tokens for namespace shop-prod (oldest 89 days)",
        "synthetic checkout journey passed in 2.41 s from 4 regions",
        "error budget for api-availability at 71.3% remaining for the 28-day window",
        "autoscaler target for shop-api set to min 6 / max 24 replicas (was 6 / 18)",
        "pager rotation handed to team payments-oncall until 09:00 UTC",
    ];
    let mut s = String::new();
    for (i, step) in steps.iter().cycle().take(15 * 7).enumerate() {
        let round = i / steps.len();
        let pad = format!(
            " trace_id={:032x} span_id={:016x} host=deploy-runner-{} attempt={} labels=env:prod,region:eu-west-2,team:shop,pipeline:release-train,trigger:merge-queue",
            0x9e3779b97f4a7c15u64.wrapping_mul(i as u64 + 1) as u128 * 7919,
            0xc2b2ae3d27d4eb4fu64.wrapping_mul(i as u64 + 3),
            i % 5,
            round + 1
        );
        // The migration is attempted once (round 3); every other round it is already applied.
        let step = if step.starts_with("migration") {
            if round == 3 {
                step.to_string()
            } else {
                continue;
            }
        } else {
            format!("round {}: {step}", round + 1)
        };
        s.push_str(&format!(
            "2026-03-04T01:{:02}:{:02}Z INFO deployer {step}{pad}\n",
            i / 60,
            i % 60
        ));
    }
    s
}

fn summarize(
    text: &str,
    engine: Option<&mut Engine>,
    counter: &GgufTokenizer,
) -> guard::GuardResponse {
    let session = tempfile::tempdir().unwrap();
    let req = GuardRequest {
        content: text.as_bytes().to_vec(),
        tool: "Bash".to_string(),
        args: Some(serde_json::json!({"command": "deployctl logs release-train --last"})),
        intent: Some("Did the schema change go through?".to_string()),
        session_dir: session.path().to_path_buf(),
        limits: Limits {
            token_limit: 2_000,
            model_ms: if engine.is_some() { 120_000 } else { 0 },
            ..Limits::default()
        },
        keep_binary_inline: false,
        deadline: None,
        source: None,
    };
    let narrator = engine.map(|e| e as &mut dyn Narrator);
    let r = guard::guard(req, Some(counter), narrator).unwrap();
    assert_eq!(r.kind, ResultKind::Summary, "{}", r.text);
    r
}

#[test]
fn the_model_picks_excerpts_that_are_quoted_verbatim_and_keeps_the_fact() {
    let path = model_path("small");
    let counter = GgufTokenizer::from_gguf_path(&path).unwrap();
    let text = deploy_log();
    let without = summarize(&text, None, &counter);
    let mut engine = Engine::load(&EngineOptions {
        model_path: path,
        system_prompt: Some(toolsum::guard::prompt::SYSTEM_PROMPT.to_string()),
        ..EngineOptions::default()
    })
    .unwrap();
    let with = summarize(&text, Some(&mut engine), &counter);
    assert!(without.model.is_none());
    assert!(
        with.model.is_some(),
        "the model did not run: {:?}",
        with.reason
    );
    assert!(with.timings_ms.decode > 0.0, "{:?}", with.reason);
    let fact = "transaction rolled back, schema left at 0186";
    for r in [&without, &with] {
        assert!(r.text.contains(fact), "{}", r.text);
    }
    // Every quoted excerpt is the file's line, whole or cut, never reworded.
    let lines: Vec<&str> = text.lines().collect();
    for l in with.text.lines() {
        let Some((n, body)) = l
            .strip_prefix('L')
            .and_then(|r| r.split_once(": "))
            .and_then(|(n, b)| Some((n.parse::<usize>().ok()?, b)))
        else {
            continue;
        };
        let body = body
            .strip_prefix("[")
            .map_or(body, |b| b.split_once("] ").map_or(b, |x| x.1));
        for piece in body
            .split("…[cut]…")
            .map(str::trim)
            .filter(|p| !p.is_empty())
        {
            assert!(
                lines[n - 1].contains(piece),
                "L{n} is not the file's line:\n{piece}\n{}",
                lines[n - 1]
            );
        }
    }
    // The Status is the model's only when it quotes the excerpts it chose; either way it
    // does not claim the run failed or succeeded on words the output lacks.
    let status = with.text.lines().next().unwrap();
    assert!(
        !status.contains("did not") || status.contains("0186"),
        "{status}"
    );
}
