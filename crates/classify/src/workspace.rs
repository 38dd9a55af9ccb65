//! The agent's workspace claim (deploy.md § Persistent workspace): whether a deploy may use the
//! PersistentVolumeClaim that holds the agent's claim name, how its size and class compare with
//! what the deploy asked for, and the fenced delete of a verified one (`undeploy
//! --delete-workspace`, the only path that ever deletes one).
//!
//! Pure. Like a pod, the claim is apiary's only when its marks say so (the two marker labels and
//! the agent-id annotation). A claim that exists is used as it is, whatever its size or class:
//! data loss is the worst failure this tool can cause, so nothing here ever plans a recreate.

use std::fmt;

use crate::binding::Owner;
use crate::facts::ObjectMarks;
use crate::failure::RequestFailure;
use crate::fence::Fence;
use crate::object::{Kind, Placed, Problem, fence_of};

/// The workspace claim as a [`Kind`] of the agent's objects: ours is used as it is, whatever its
/// size or class (it differs only for the report: [`claim_differences`]), and never updated; a
/// fenced delete that lost its precondition reads again up to [`CLAIM_DELETE_ATTEMPTS`] times; a
/// read that fails fails an undeploy that asked for the delete.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Claim;

impl Kind for Claim {
    type Shape = ClaimShape;
    type Deletion = ClaimDeletion;
    type Failure = ClaimFailure;

    const UPDATES: bool = false;
    const DELETE_ATTEMPTS: u32 = CLAIM_DELETE_ATTEMPTS;
    const SKIPS_FORBIDDEN_READ: bool = false;

    fn differs(wanted: &ClaimShape, found: &ClaimShape) -> bool {
        !claim_differences(wanted, found).is_empty()
    }

    fn deletion(observed: &ObjectMarks, owner: &Owner) -> Option<ClaimDeletion> {
        claim_deletion(observed, owner)
    }

    fn problem(problem: Problem) -> ClaimFailure {
        ClaimFailure::Problem(match problem {
            Problem::Foreign => ClaimProblem::Foreign,
            Problem::Deleting => ClaimProblem::Deleting,
            Problem::Raced => ClaimProblem::Contended,
        })
    }

    fn failed(failure: RequestFailure) -> ClaimFailure {
        ClaimFailure::Failed(failure)
    }
}

/// The fenced delete of the agent's claim, when `observed` is proven ours and can be fenced.
pub fn claim_deletion(observed: &ObjectMarks, owner: &Owner) -> Option<ClaimDeletion> {
    let fence = fence_of(observed, owner)?;
    Some(ClaimDeletion {
        name: observed.name.clone()?,
        fence,
    })
}

/// A fenced claim delete (`preconditions: {uid, resourceVersion}`) of a claim proven ours. Only
/// this module builds one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClaimDeletion {
    name: String,
    fence: Fence,
}

impl ClaimDeletion {
    /// The claim to delete.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The observation's fence.
    pub fn fence(&self) -> &Fence {
        &self.fence
    }
}

/// A claim's requested size and storage class, as asked for or as found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClaimShape {
    /// `spec.resources.requests.storage`, a quantity.
    pub size: Option<String>,
    /// `spec.storageClassName` (`None`: the cluster's default class, or none).
    pub storage_class: Option<String>,
}

/// One way a found claim differs from the one the deploy asked for; reported, never acted on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClaimDifference {
    /// Another requested size (compared by value: `1Gi` and `1024Mi` are one size).
    Size {
        /// What the deploy asked for.
        wanted: String,
        /// What the claim requests.
        found: Option<String>,
    },
    /// Another storage class. Asking for none accepts whichever class the claim has.
    StorageClass {
        /// What the deploy asked for.
        wanted: String,
        /// What the claim has.
        found: Option<String>,
    },
}

impl fmt::Display for ClaimDifference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let or_none = |v: &Option<String>| v.clone().unwrap_or_else(|| "none".to_owned());
        match self {
            Self::Size { wanted, found } => {
                write!(f, "size {} (asked {wanted})", or_none(found))
            }
            Self::StorageClass { wanted, found } => {
                write!(f, "storage class {} (asked {wanted})", or_none(found))
            }
        }
    }
}

/// How the claim `found` differs from `wanted`, in a fixed order (size, class).
pub fn claim_differences(wanted: &ClaimShape, found: &ClaimShape) -> Vec<ClaimDifference> {
    let mut differences = Vec::new();
    if let Some(size) = &wanted.size {
        let same = match (
            quantity_value(size),
            found.size.as_deref().map(quantity_value),
        ) {
            (Some(a), Some(Some(b))) => a == b,
            _ => found.size.as_deref() == Some(size.as_str()),
        };
        if !same {
            differences.push(ClaimDifference::Size {
                wanted: size.clone(),
                found: found.size.clone(),
            });
        }
    }
    if let Some(class) = &wanted.storage_class
        && found.storage_class.as_ref() != Some(class)
    {
        differences.push(ClaimDifference::StorageClass {
            wanted: class.clone(),
            found: found.storage_class.clone(),
        });
    }
    differences
}

/// What the deploy did about its workspace claim, for its report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClaimReport {
    /// The claim's name.
    pub name: String,
    /// Whether this call created it (otherwise it was found and used as is).
    pub created: bool,
    /// How a found claim differs from what was asked; empty when created or equal.
    pub differences: Vec<ClaimDifference>,
}

/// The report of a deploy that put its claim `name` in place as `placed` says, having asked for
/// `wanted`: created, or found and how it differs (a claim is never updated).
pub fn claim_report(name: String, placed: Placed<ClaimShape>, wanted: &ClaimShape) -> ClaimReport {
    let differences = match &placed {
        Placed::Found(found) => claim_differences(wanted, found),
        Placed::Created | Placed::Updated => Vec::new(),
    };
    ClaimReport {
        name,
        created: placed == Placed::Created,
        differences,
    }
}

/// The agent's claim as `status` reads it (deploy.md § Persistent workspace).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClaimStatus {
    /// The claim's name.
    pub name: String,
    /// Whether its marks prove it apiary's for this agent (a foreign one is never used).
    pub ours: bool,
    /// Its requested size and class.
    pub shape: ClaimShape,
    /// `status.phase` (`Pending`, `Bound`, `Lost`), when set.
    pub phase: Option<String>,
    /// Whether it is being deleted.
    pub deleting: bool,
}

impl ClaimStatus {
    /// The status of the claim `name` read with `observed` marks, `shape` and `phase`: ours
    /// when its marks prove it apiary's for `owner` and it can be fenced.
    pub fn of(
        name: String,
        observed: &ObjectMarks,
        owner: &Owner,
        shape: ClaimShape,
        phase: Option<String>,
    ) -> ClaimStatus {
        ClaimStatus {
            name,
            ours: fence_of(observed, owner).is_some(),
            shape,
            phase,
            deleting: observed.deletion_marked,
        }
    }
}

impl fmt::Display for ClaimStatus {
    /// `NAME (SIZE, class CLASS, PHASE)`, with what is known; a foreign or deleting claim says so.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts: Vec<String> = Vec::new();
        if !self.ours {
            parts.push("not apiary's: never used".to_owned());
        }
        parts.extend(self.shape.size.clone());
        parts.extend(
            self.shape
                .storage_class
                .as_ref()
                .map(|c| format!("class {c}")),
        );
        parts.extend(self.phase.clone());
        if self.deleting {
            parts.push("deleting".to_owned());
        }
        if parts.is_empty() {
            f.write_str(&self.name)
        } else {
            write!(f, "{} ({})", self.name, parts.join(", "))
        }
    }
}

/// What an undeploy did with the agent's claim (deploy.md § Persistent workspace): kept unless
/// `--delete-workspace` asked for its fenced delete and it was accepted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClaimFate {
    /// The claim's name.
    pub name: String,
    /// Whether this call's fenced delete was accepted.
    pub deleted: bool,
}

/// How often `undeploy --delete-workspace` reads its claim again after a fenced delete that lost
/// its precondition (the volume controller writes the claim's status) before it gives up for
/// this call.
pub const CLAIM_DELETE_ATTEMPTS: u32 = 3;

/// Why the agent's workspace claim could not be used (E16).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClaimFailure {
    /// The claim under the name is foreign, being deleted, or went away twice.
    Problem(ClaimProblem),
    /// A request failed.
    Failed(RequestFailure),
}

/// Why a deploy could not use its agent's claim (E16).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClaimProblem {
    /// A claim that is not apiary's for this agent holds the name.
    Foreign,
    /// The agent's claim is being deleted.
    Deleting,
    /// It was deleted between the create that found it and the read, and taken again before a
    /// second create: another writer is at work; the deploy fails rather than guess.
    Contended,
}

impl fmt::Display for ClaimProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Foreign => {
                "exists but is not apiary's for this agent; apiary never uses or changes it: \
                 remove it, or use another namespace or agent name"
            }
            Self::Deleting => {
                "is being deleted (its data with it); deploy again once it is gone, and the \
                 agent gets a new, empty workspace"
            }
            Self::Contended => "was deleted and recreated by someone else meanwhile; deploy again",
        })
    }
}

/// The exact value of a Kubernetes quantity in thousandths (`1Gi` → 1073741824000, `500m` →
/// 500), or `None` when the text is not a quantity or does not fit. Used only to compare sizes.
pub fn quantity_value(text: &str) -> Option<u128> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '+' || c == '-'))
        .unwrap_or(text.len());
    let (number, suffix) = text.split_at(split);
    let number = number.strip_prefix('+').unwrap_or(number);
    let (whole, fraction) = match number.split_once('.') {
        Some((w, f)) => (w, f),
        None => (number, ""),
    };
    // The mantissa in units of 10^-scale: digits only (a sign left here, another point or no
    // digit at all is not a quantity; the parse refuses an empty mantissa).
    let digits = format!("{whole}{fraction}");
    if !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let mantissa: u128 = digits.parse().ok()?;
    let scale = u32::try_from(fraction.len()).ok()?;
    let (binary, decimal): (u32, i32) = match suffix {
        "" => (0, 0),
        "Ki" => (10, 0),
        "Mi" => (20, 0),
        "Gi" => (30, 0),
        "Ti" => (40, 0),
        "Pi" => (50, 0),
        "Ei" => (60, 0),
        "n" => (0, -9),
        "u" => (0, -6),
        "m" => (0, -3),
        "k" => (0, 3),
        "M" => (0, 6),
        "G" => (0, 9),
        "T" => (0, 12),
        "P" => (0, 15),
        "E" => (0, 18),
        other => {
            let exponent = other.strip_prefix(['e', 'E'])?;
            (0, exponent.parse().ok()?)
        }
    };
    // value × 1000 = mantissa × 2^binary × 10^(decimal + 3 − scale), kept exact.
    let power = decimal + 3 - i32::try_from(scale).ok()?;
    let shifted = mantissa.checked_mul(1u128.checked_shl(binary)?)?;
    if power >= 0 {
        shifted.checked_mul(10u128.checked_pow(u32::try_from(power).ok()?)?)
    } else {
        let divisor = 10u128.checked_pow(u32::try_from(-power).ok()?)?;
        (shifted % divisor == 0).then(|| shifted / divisor)
    }
}

#[cfg(test)]
mod tests;
