//! The seed-discovery configuration (seeds.md § Configuration): `Pods`, `Port`, their validation
//! (`InvalidPods`) and, behind the `serde` feature, their deserialized form.
//!
//! Pure layer: decides only whether a configuration is acceptable. It must not build a client or
//! touch the network, because validation has to run before any cluster configuration exists.

use std::num::NonZeroU16;

/// Which pods to list and which port to pair with their addresses.
///
/// The fields are public so a caller can build the value literally; every constructor that
/// consumes it (`PodSeeds`, deserialization) calls [`Pods::validate`] first.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(try_from = "UncheckedPods"))]
pub struct Pods {
    /// The namespace to list; `None` means the client's default namespace.
    pub namespace: Option<String>,
    /// Sent verbatim as `labelSelector`, so every server-side syntax works.
    pub label_selector: String,
    /// The port paired with every pod's address.
    pub port: Port,
}

/// The port of a seed address: fixed, or looked up by name in each pod's own spec.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(try_from = "PortFields"))]
pub enum Port {
    /// Every pod gets this port; zero is unrepresentable.
    Number(NonZeroU16),
    /// The number of the first container port of this name (seeds.md § Named container port).
    Name(String),
}

/// Why a [`Pods`] configuration is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum InvalidPods {
    /// The selector is empty or only whitespace: it would match every pod in the namespace,
    /// seeding from strangers.
    #[error("label_selector is blank")]
    BlankLabelSelector,
    /// The namespace is `Some` but empty or only whitespace.
    #[error("namespace is blank")]
    BlankNamespace,
    /// A `Port::Name` that is empty or only whitespace.
    #[error("port name is blank")]
    BlankPortName,
}

impl Pods {
    /// Checks the configuration. Whitespace is trimmed only to test for blankness; accepted
    /// values are used verbatim. Selector syntax, namespace existence and port-name syntax are
    /// deliberately not checked (the apiserver is the judge of those).
    ///
    /// # Errors
    /// The first blank field, checked in the order selector, namespace, port name.
    pub fn validate(&self) -> Result<(), InvalidPods> {
        if is_blank(&self.label_selector) {
            return Err(InvalidPods::BlankLabelSelector);
        }
        if self.namespace.as_deref().is_some_and(is_blank) {
            return Err(InvalidPods::BlankNamespace);
        }
        if let Port::Name(name) = &self.port
            && is_blank(name)
        {
            return Err(InvalidPods::BlankPortName);
        }
        Ok(())
    }
}

fn is_blank(value: &str) -> bool {
    value.trim().is_empty()
}

/// The unchecked twin of [`Pods`]: unknown fields are refused so a typo fails instead of
/// silently defaulting, and the value is validated on conversion.
#[cfg(feature = "serde")]
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct UncheckedPods {
    #[serde(default)]
    namespace: Option<String>,
    label_selector: String,
    port: Port,
}

#[cfg(feature = "serde")]
impl TryFrom<UncheckedPods> for Pods {
    type Error = InvalidPods;

    fn try_from(unchecked: UncheckedPods) -> Result<Self, InvalidPods> {
        let pods = Pods {
            namespace: unchecked.namespace,
            label_selector: unchecked.label_selector,
            port: unchecked.port,
        };
        pods.validate()?;
        Ok(pods)
    }
}

/// The wire form of [`Port`]: a map with exactly one of `number` or `name` (the externally tagged
/// snake_case form), read as a struct so JSON and YAML accept the same text.
#[cfg(feature = "serde")]
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct PortFields {
    #[serde(default)]
    number: Option<NonZeroU16>,
    #[serde(default)]
    name: Option<String>,
}

/// A port map without exactly one of its two keys.
#[cfg(feature = "serde")]
#[derive(Debug, thiserror::Error)]
#[error("port needs exactly one of `number` or `name`")]
struct PortKeys;

#[cfg(feature = "serde")]
impl TryFrom<PortFields> for Port {
    type Error = PortKeys;

    fn try_from(fields: PortFields) -> Result<Self, PortKeys> {
        match (fields.number, fields.name) {
            (Some(number), None) => Ok(Port::Number(number)),
            (None, Some(name)) => Ok(Port::Name(name)),
            _ => Err(PortKeys),
        }
    }
}
