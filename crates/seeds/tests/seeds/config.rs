//! Validation of `Pods` (seeds.md § Validation): blank selector, namespace and port name are
//! refused with the exact messages; values are otherwise accepted verbatim (K8's pure half).
//!
//! Pure tests; the "before any client" half of K8/K9 is tested in `apiary-substrate-kube`.

use crate::support::*;
use apiary_seeds::{InvalidPods, Pods, Port};

/// The three messages are the spec's literal strings.
#[test]
fn k8_invalid_pods_messages_are_literal() {
    assert_eq!(
        InvalidPods::BlankLabelSelector.to_string(),
        "label_selector is blank"
    );
    assert_eq!(
        InvalidPods::BlankNamespace.to_string(),
        "namespace is blank"
    );
    assert_eq!(InvalidPods::BlankPortName.to_string(), "port name is blank");
}

/// K8: a whitespace-only selector is blank (it would match every pod in the namespace).
#[test]
fn k8_blank_selector_is_refused() {
    for selector in ["", " ", "\t\n"] {
        let config = Pods {
            label_selector: selector.to_owned(),
            ..pods(number(7000))
        };
        assert_eq!(
            config.validate(),
            Err(InvalidPods::BlankLabelSelector),
            "{selector:?}"
        );
    }
}

/// K8: `Some` blank namespace is refused; `None` means the client's default and is fine.
#[test]
fn k8_blank_namespace_is_refused_only_when_some() {
    for namespace in ["", "  "] {
        let config = Pods {
            namespace: Some(namespace.to_owned()),
            ..pods(number(7000))
        };
        assert_eq!(config.validate(), Err(InvalidPods::BlankNamespace));
    }
    let config = Pods {
        namespace: None,
        ..pods(number(7000))
    };
    assert_eq!(config.validate(), Ok(()));
}

/// K8: a blank port name is refused; a fixed port has no name to check.
#[test]
fn k8_blank_port_name_is_refused() {
    for port_name in ["", " "] {
        assert_eq!(
            pods(name(port_name)).validate(),
            Err(InvalidPods::BlankPortName)
        );
    }
    assert_eq!(pods(name("gossip")).validate(), Ok(()));
    assert_eq!(pods(number(1)).validate(), Ok(()));
}

/// Whitespace is trimmed only to test for blankness: padded values are accepted verbatim.
#[test]
fn padded_values_are_accepted_verbatim() {
    let config = Pods {
        namespace: Some(" ring ".to_owned()),
        label_selector: " app=ring-node ".to_owned(),
        port: Port::Name(" gossip ".to_owned()),
    };
    assert_eq!(config.validate(), Ok(()));
    assert_eq!(config.label_selector, " app=ring-node ");
}

/// The selector is checked first, then the namespace, then the port name.
#[test]
fn first_blank_field_in_order_is_reported() {
    let all_blank = Pods {
        namespace: Some(String::new()),
        label_selector: String::new(),
        port: Port::Name(String::new()),
    };
    assert_eq!(all_blank.validate(), Err(InvalidPods::BlankLabelSelector));
    let namespace_and_port = Pods {
        label_selector: "a=b".to_owned(),
        ..all_blank
    };
    assert_eq!(
        namespace_and_port.validate(),
        Err(InvalidPods::BlankNamespace)
    );
}

/// Selector syntax is deliberately not validated: the server judges it at list time.
#[test]
fn selector_syntax_is_not_validated() {
    let config = Pods {
        label_selector: "app in (a,b),!legacy".to_owned(),
        ..pods(number(7000))
    };
    assert_eq!(config.validate(), Ok(()));
    let malformed = Pods {
        label_selector: "===".to_owned(),
        ..pods(number(7000))
    };
    assert_eq!(malformed.validate(), Ok(()));
}
