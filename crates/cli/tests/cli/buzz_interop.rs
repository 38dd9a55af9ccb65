//! End-to-end interop (docs/buzz-provider.md § Tests): pods and Secrets shaped exactly as the
//! original `buzz-backend-kubernetes` creates them, written in this test from buzz-provider.md
//! § 6's templates as JSON with § 7's fingerprint computed here (`crate::common::buzz`), never by apiary's
//! builders, are verified as ours by apiary's provider binary: a started one is a no-op, a wedged
//! never-started one with another fingerprint is replaced and its Secret later collected. And the
//! two bindings keep apart in one namespace: the provider never touches an apiary-native agent,
//! `apiary undeploy` and `apiary gc` never touch the buzz objects. Each scenario runs on the
//! simulator (`::sim`) and on a real `kube-apiserver` with the fake kubelet (`::real`).
//!
//! Test-only code: assertions on answers, request logs and server objects, never on durations;
//! no env value is printed.

use std::time::{Duration, Instant};

use crate::common::buzz::{
    POD, Template, buzz_image, creating_status, deploy_request, env_from_secret, finish,
    original_pod, original_secret, running_status, secret_name, spawn,
};
use crate::common::{
    BackendKind, Fixture, IMAGE, WAIT_BOUND, container_state, image, on_both_backends,
};
use apiary_apiserver_sim::{Resource, Verb};

/// The generation of the original backend's attempt in these scenarios.
const GENERATION: &str = "0a1b2c3d";

/// Put the original backend's attempt (Secret, then pod) for `template` in place, its Secret
/// `age` old on the simulator, with the create-intent `intent`.
fn insert_original_attempt(fx: &Fixture, template: &Template, intent: &str, age: Duration) {
    let secret = original_secret(fx.namespace(), GENERATION);
    let pod = original_pod(template, &secret_name(GENERATION), intent);
    fx.insert_original(&[secret], Some(pod), age);
}

/// Clear the request log and deploy `image` again, `ok:true`, with the original backend's
/// Secrets past the orphan age gate: on the simulator they were inserted 1300 s old, on a real
/// server the provider reads a `Date` clock 1300 s ahead.
fn redeploy_past_the_age_gate(fx: &Fixture, image: &str) {
    fx.clear_requests();
    let request = deploy_request(fx.namespace(), image);
    let answer = match fx.kind() {
        BackendKind::Sim => fx.provide(&request),
        BackendKind::Real => fx.provide_with_clock_ahead(&request),
    };
    answer.assert_ok();
}

/// The names of the objects every mutation since the last clear wrote: the path's last segment,
/// or for a create (whose path names only the collection) the body's `metadata.name`.
fn mutated_objects(fx: &Fixture) -> Vec<String> {
    fx.requests()
        .iter()
        .filter(|r| r.is_mutation())
        .map(|r| {
            if r.method == "POST" {
                serde_json::from_str::<serde_json::Value>(&r.body)
                    .ok()
                    .and_then(|b| b["metadata"]["name"].as_str().map(str::to_owned))
                    .unwrap_or_else(|| format!("POST {}", r.path))
            } else {
                r.path.rsplit('/').next().unwrap_or_default().to_owned()
            }
        })
        .collect()
}

on_both_backends! {
    /// A started pod of the original backend (with buzz-provider.md § 7's fingerprint for this
    /// request) is verified as ours and returned without a write: same uid, `ok:true`, its
    /// Secret kept.
    fn started_original_pod_is_a_noop(fx) {
        let image = buzz_image("agent");
        let template = Template::for_request(fx.namespace(), &image);
        insert_original_attempt(&fx, &template, &template.intent(), Duration::ZERO);
        let pod = fx.wait_pod(POD, "running", |p| container_state(p) == "running");
        fx.clear_requests();
        fx.buzz_deploy(&image).assert_ok();
        assert_eq!(fx.pod_uid(POD), pod.metadata.uid.clone().expect("uid"));
        assert_eq!(fx.secret_names(), [secret_name(GENERATION)]);
        assert!(fx.mutations().is_empty(), "{:?}", fx.mutations());
    }

    /// Fingerprint compatibility at the reconciler: a never-started pod of the original backend
    /// whose recorded fingerprint is buzz-provider.md § 7's for this request (computed here)
    /// is awaited, never replaced (deploy.md § Classification, row 7); once it runs, the same
    /// pod is the answer and nothing was written. (A differing fingerprint would have been a
    /// delete.)
    fn recoverable_original_pod_with_the_same_intent_is_awaited(fx) {
        let image = buzz_image("agent");
        let template = Template::for_request(fx.namespace(), &image);
        fx.insert_original(&[original_secret(fx.namespace(), GENERATION)], None, Duration::ZERO);
        let pod = original_pod(&template, &secret_name(GENERATION), &template.intent());
        fx.insert_inert_pod(pod, creating_status(&image), false);
        let uid = fx.pod_uid(POD);
        let mut child = spawn(fx.provider(), &deploy_request(fx.namespace(), &image));
        // Flip the pod to running only once the provider has observed it and is waiting (a
        // watch of the pod, or a second read); a delete would mean it chose to replace it, and an
        // exit that it answered without waiting.
        let began = Instant::now();
        loop {
            let requests = fx.requests();
            let reads = requests
                .iter()
                .filter(|r| r.is(Verb::Get, Resource::Pods) && r.path.ends_with(POD))
                .count();
            let waiting = requests.iter().any(|r| r.is(Verb::Watch, Resource::Pods)) || reads >= 2;
            let deleted = requests.iter().any(|r| r.method == "DELETE");
            let exited = child.try_wait().expect("provider status").is_some();
            if waiting || deleted || exited {
                break;
            }
            assert!(began.elapsed() < WAIT_BOUND, "the provider never observed the pod");
            std::thread::sleep(Duration::from_millis(20));
        }
        fx.set_pod_status(POD, running_status(&image));
        finish(child).assert_ok();
        assert_eq!(fx.pod_uid(POD), uid, "the same pod");
        assert!(fx.mutations().is_empty(), "{:?}", fx.mutations());
        assert_eq!(fx.secret_names(), [secret_name(GENERATION)]);
    }

    /// A never-started (wedged) pod of the original backend whose recorded fingerprint differs
    /// from this request's (it was built for another image) is replaced (deploy.md
    /// § Classification, row 8): a fenced delete, a new pod on the requested image with a new
    /// Secret. Its previous-attempt Secret, protected while the wedged pod referred to it, is
    /// then an orphan, and the next deploy's GC collects it once it is past the age gate
    /// (simulator: inserted 1300 s old; real server: the `Date` clock 1300 s ahead).
    fn wedged_original_pod_is_replaced_and_its_secret_collected(fx) {
        let wedged = Template::for_request(fx.namespace(), &buzz_image("agent-never-starts"));
        insert_original_attempt(&fx, &wedged, &wedged.intent(), Duration::from_secs(1300));
        let old_uid = fx.pod_uid(POD);
        let image = buzz_image("agent");
        fx.buzz_deploy(&image).assert_ok();
        let deletes: Vec<String> = fx
            .requests()
            .iter()
            .filter(|r| r.is(Verb::Delete, Resource::Pods))
            .map(|r| format!("{} {}", r.path, r.body))
            .collect();
        assert_eq!(deletes.len(), 1, "{deletes:?}");
        assert!(deletes[0].contains(&old_uid), "fenced by the observed uid: {deletes:?}");
        let pod = fx.pod(POD).expect("the replacement");
        let new_uid = pod.metadata.uid.clone().expect("uid");
        assert_ne!(new_uid, old_uid, "replaced");
        let container = &pod.spec.as_ref().expect("spec").containers[0];
        assert_eq!(container.image.as_deref(), Some(image.as_str()));
        let current = env_from_secret(&pod).expect("envFrom");
        assert_ne!(current, secret_name(GENERATION));
        let mut both = vec![current.clone(), secret_name(GENERATION)];
        both.sort();
        assert_eq!(fx.sorted_secret_names(), both, "the old Secret waits for the age gate");

        redeploy_past_the_age_gate(&fx, &image);
        assert_eq!(fx.pod_uid(POD), new_uid, "a no-op");
        assert_eq!(fx.secret_names(), [current], "the previous attempt's Secret was collected");
    }

    /// One namespace, both bindings: an apiary-native agent (running) and apiary residue (a
    /// crashed agent's pod and Secret) are never touched by the provider, whose GC would collect
    /// its own residue; `apiary undeploy`, `apiary gc <agent>` and `apiary gc --all` then never
    /// touch the buzz pod, its Secret, or an old buzz orphan Secret, which the provider's next
    /// deploy does collect (so it was collectable, and apiary left it alone).
    fn apiary_native_and_buzz_objects_never_touch_each_other(fx) {
        let native = fx.apiary(&["deploy", "native-bot", "--image", IMAGE]);
        assert_eq!(native.code, 0, "{native:?}");
        let native_pod = native.stdout.trim().to_owned();
        let crashed = fx.apiary(&["deploy", "native-crasher", "--image", &image("agent-crash")]);
        assert_eq!(crashed.code, 1, "{crashed:?}");
        let apiary_pods: Vec<(String, String)> = fx
            .pods()
            .into_iter()
            .map(|p| (p.metadata.name.expect("name"), p.metadata.uid.expect("uid")))
            .collect();
        assert_eq!(apiary_pods.len(), 2);
        let apiary_secrets = fx.sorted_secret_names();
        assert_eq!(apiary_secrets.len(), 2);

        let image = buzz_image("agent");
        fx.clear_requests();
        fx.buzz_deploy(&image).assert_ok();
        let touched: Vec<String> = mutated_objects(&fx)
            .into_iter()
            .filter(|m| !m.starts_with("buzz-agent-"))
            .collect();
        assert!(touched.is_empty(), "the provider wrote outside its own objects: {touched:?}");
        for (name, uid) in &apiary_pods {
            assert_eq!(&fx.pod_uid(name), uid, "{name} untouched");
        }
        let buzz_uid = fx.pod_uid(POD);
        let buzz_secret = env_from_secret(&fx.pod(POD).expect("pod")).expect("envFrom");
        let secrets = fx.sorted_secret_names();
        for name in &apiary_secrets {
            assert!(secrets.contains(name), "{name} untouched");
        }

        let orphan = original_secret(fx.namespace(), "0000b001");
        fx.insert_original(&[orphan], None, Duration::from_secs(1300));
        for args in [
            &["undeploy", "native-bot"][..],
            &["gc", "native-crasher"][..],
            &["gc", "--all"][..],
        ] {
            let run = fx.apiary(args);
            assert_eq!(run.code, 0, "{args:?}: {run:?}");
        }
        let touched: Vec<String> = mutated_objects(&fx)
            .into_iter()
            .filter(|m| m.contains("buzz-agent-"))
            .collect();
        assert!(touched.is_empty(), "apiary wrote to buzz objects: {touched:?}");
        assert!(fx.pod(&native_pod).is_none(), "undeployed");
        assert_eq!(fx.pod_names(), [POD], "the crashed residue was collected by apiary gc");
        assert_eq!(fx.pod_uid(POD), buzz_uid);
        let mut buzz_secrets = vec![buzz_secret.clone(), secret_name("0000b001")];
        buzz_secrets.sort();
        assert_eq!(fx.sorted_secret_names(), buzz_secrets, "only the buzz Secrets are left");

        redeploy_past_the_age_gate(&fx, &image);
        assert_eq!(fx.secret_names(), [buzz_secret], "the orphan was the provider's to collect");
    }
}
