//! Unit tests of list paging: limits, continue tokens (and their expiry on compaction), pages
//! over stored keys rather than matches, and selector filtering. Pure; no I/O.

use k8s_openapi::api::core::v1::Secret;

use crate::model::test_support::*;
use crate::model::*;

/// Pagination: limit pages in name order with remainingItemCount; the continue token resumes
/// after the last item; all pages together are the full list.
#[test]
fn list_pagination() {
    let mut m = model();
    for n in ["a", "b", "c", "d", "e"] {
        m.create_secret(NS, secret_named(n)).unwrap();
    }
    let mut options = ListOptions {
        limit: Some(2),
        ..ListOptions::default()
    };
    let first = m.list_secrets(Some(NS), &options).unwrap();
    let names = |p: &ListPage<Secret>| -> Vec<String> {
        p.items
            .iter()
            .map(|s| s.metadata.name.clone().unwrap())
            .collect()
    };
    assert_eq!(names(&first), ["a", "b"]);
    assert_eq!(first.remaining_item_count, Some(3));
    m.create_secret(NS, secret_named("f")).unwrap();
    options.continue_token = first.continue_token.clone();
    let second = m.list_secrets(Some(NS), &options).unwrap();
    assert_eq!(names(&second), ["c", "d"]);
    assert_eq!(second.resource_version, first.resource_version);
    options.continue_token = second.continue_token.clone();
    options.limit = Some(10);
    let last = m.list_secrets(Some(NS), &options).unwrap();
    assert_eq!(names(&last), ["e", "f"]);
    assert_eq!(last.continue_token, None);
    assert_eq!(last.remaining_item_count, None);
    let all = m.list_secrets(None, &ListOptions::default()).unwrap();
    assert_eq!(all.items.len(), 6);
    assert_eq!(all.resource_version, m.resource_version().to_string());
}

/// An exact-size limit yields no continue token (boundary of `l < len`).
#[test]
fn limit_equal_to_count_has_no_continue() {
    let mut m = model();
    m.create_secret(NS, secret_named("a")).unwrap();
    m.create_secret(NS, secret_named("b")).unwrap();
    let page = m
        .list_secrets(
            Some(NS),
            &ListOptions {
                limit: Some(2),
                ..ListOptions::default()
            },
        )
        .unwrap();
    assert_eq!(page.items.len(), 2);
    assert_eq!(page.continue_token, None);
}

/// As kube-apiserver pages over stored keys, not matches: a filtered page that fills its limit
/// carries a continue token while any key follows it, even one the selector rejects, and the
/// next page is then empty without a token (found against v1.20.2 by
/// crates/seeds-kube/tests/real_seeds/seeds.rs: 2,000 matches in pages of 500 took five LISTs).
#[test]
fn filled_filtered_page_continues_while_keys_remain() {
    let mut m = model();
    for (n, app) in [("a", "ring"), ("b", "ring"), ("z", "other")] {
        let mut secret = secret_named(n);
        secret.metadata.labels = Some([("app".to_owned(), app.to_owned())].into());
        m.create_secret(NS, secret).unwrap();
    }
    let mut options = ListOptions {
        label_selector: Some("app=ring".to_owned()),
        limit: Some(2),
        ..ListOptions::default()
    };
    let first = m.list_secrets(Some(NS), &options).unwrap();
    assert_eq!(first.items.len(), 2);
    assert!(
        first.continue_token.is_some(),
        "key z follows the full page"
    );
    assert_eq!(first.remaining_item_count, None, "filtered: not counted");
    options.continue_token = first.continue_token;
    let second = m.list_secrets(Some(NS), &options).unwrap();
    assert!(second.items.is_empty());
    assert_eq!(second.continue_token, None);
    // A page that is not full ends the list, keys or not.
    options.continue_token = None;
    options.limit = Some(3);
    let whole = m.list_secrets(Some(NS), &options).unwrap();
    assert_eq!((whole.items.len(), whole.continue_token), (2, None));
}

/// Continue tokens expire with compaction (410 Expired); garbage tokens are 400.
#[test]
fn continue_tokens_expire_on_compaction() {
    let mut m = model();
    for n in ["a", "b", "c"] {
        m.create_secret(NS, secret_named(n)).unwrap();
    }
    let first = m
        .list_secrets(
            Some(NS),
            &ListOptions {
                limit: Some(1),
                ..ListOptions::default()
            },
        )
        .unwrap();
    m.create_secret(NS, secret_named("d")).unwrap();
    m.compact();
    let err = m
        .list_secrets(
            Some(NS),
            &ListOptions {
                continue_token: first.continue_token,
                ..ListOptions::default()
            },
        )
        .unwrap_err();
    assert_eq!((err.code(), err.reason()), (410, "Expired"));
    assert!(err.to_string().contains("continue parameter is too old"));
    let err = m
        .list_secrets(
            Some(NS),
            &ListOptions {
                continue_token: Some("zz".into()),
                ..ListOptions::default()
            },
        )
        .unwrap_err();
    assert_eq!(err.code(), 400);
}

/// Label and field selectors filter lists; a bad selector is 400.
#[test]
fn list_filters_by_selectors() {
    let mut m = model();
    m.create_pod(NS, pod_named("a", IMAGE, None)).unwrap();
    m.create_pod(NS, pod_named("b", "r.io/crash@sha256:aa", None))
        .unwrap();
    m.advance(secs(2));
    let list = |m: &ClusterModel, labels: Option<&str>, fields: Option<&str>| {
        m.list_pods(
            Some(NS),
            &ListOptions {
                label_selector: labels.map(str::to_owned),
                field_selector: fields.map(str::to_owned),
                ..ListOptions::default()
            },
        )
        .map(|p| {
            p.items
                .into_iter()
                .map(|p| p.metadata.name.unwrap())
                .collect::<Vec<_>>()
        })
    };
    assert_eq!(list(&m, Some("app=a"), None).unwrap(), ["a"]);
    assert_eq!(list(&m, Some("app in (a,b)"), None).unwrap(), ["a", "b"]);
    assert_eq!(list(&m, None, Some("status.phase=Failed")).unwrap(), ["b"]);
    assert_eq!(list(&m, None, Some("metadata.name=a")).unwrap(), ["a"]);
    assert_eq!(
        list(&m, Some("app=a"), Some("status.phase=Failed")).unwrap(),
        Vec::<String>::new()
    );
    assert_eq!(list(&m, Some("app in ("), None).unwrap_err().code(), 400);
    assert_eq!(
        list(&m, None, Some("spec.bogus=x")).unwrap_err().code(),
        400
    );
    assert!(list(&m, None, None).unwrap().len() == 2);
    assert!(
        m.list_pods(Some("other"), &ListOptions::default())
            .unwrap()
            .items
            .is_empty()
    );
}
