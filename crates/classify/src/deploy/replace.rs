//! `deploy --replace` (deploy.md § Replacing a live agent): how a replacing deploy amends the
//! classification of what it observes.
//!
//! Pure. The rule that keeps concurrent replaces from deleting each other's pods in turn: a
//! replacing call deletes a pod of another intent only when it is the pod this call *first*
//! observed, and at most once. A started pod of another intent is then deleted (fenced by the
//! observation that authorised it, graceful), awaited, and the normal create follows; a pod of
//! another intent that appeared later (a concurrent deploy's) is left alone: observed until it
//! starts and then adopted, its differing intent reported. Nothing changes for a pod whose intent
//! matches, or for terminated and provably broken pods (rows 4 and 5 never run again).
//!
//! The pod a replacing call deleted leaves its attempt's Secret behind; [`Retiring`] is what the
//! machine remembers of it, so that once that pod is gone its Secret is dropped in the same call
//! (deploy.md § Replacing a live agent, rule 6).

use crate::action::Action;
use crate::startup::StartupState;
use crate::verify::SettledPod;

/// The Secret of the pod a replacing call deleted (rule 1): dropped, uid-fenced and only when no
/// listed pod references it, once the pod `uid` is observed gone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Retiring {
    /// The uid of the deleted pod.
    pub(crate) uid: String,
    /// The pod's own Secret (its `envFrom`).
    pub(crate) secret: String,
}

impl Retiring {
    /// What to retire when `action` is the replace delete of rule 1 (`replaced`: a kept started
    /// pod turned into a delete) or waits for a pod already being deleted (row 2: the old pod of
    /// a replace that ended before it was gone, say); `None` for any other action (the deletes
    /// of rows 4, 5 and 8 leave theirs to the GC pass, which collects a terminated pod's Secret
    /// with it) and for a pod without a Secret of its own. Every attempt has a Secret of its own,
    /// so once its pod is gone no pod of any deploy can come to reference it.
    pub(crate) fn of(action: &Action, replaced: bool, settled: &SettledPod) -> Option<Retiring> {
        let goes = match action {
            Action::Delete(_) => replaced,
            Action::AwaitDisappearance { .. } => true,
            _ => false,
        };
        let pod = settled.pod();
        let secret = pod.facts().env_from_secret.clone().filter(|_| goes)?;
        Some(Retiring {
            uid: pod.fence().uid().to_owned(),
            secret,
        })
    }
}

/// The replace authorisation of one call: the pod its first read of the name showed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) enum Replace {
    /// The name has not been read yet.
    #[default]
    Unread,
    /// The uid the first read showed; a pod of another intent under it may be deleted once.
    First(String),
    /// The first read showed no pod, or the one delete it allowed was asked for.
    Spent,
}

impl Replace {
    /// Record a read of the name (its uid, `None` = confirmed absent). The first read names the
    /// pod a replace may delete; a later read that shows the name absent or under another uid
    /// shows that pod gone for good (a uid never comes back), so nothing is authorised any more.
    pub(crate) fn observe(&mut self, uid: Option<&str>) {
        match self {
            Replace::Unread => {
                *self = uid.map_or(Replace::Spent, |uid| Replace::First(uid.to_owned()));
            }
            Replace::First(first) if uid != Some(first.as_str()) => *self = Replace::Spent,
            Replace::First(_) | Replace::Spent => {}
        }
    }

    /// Whether `uid` is the first observed pod, not yet deleted by this call.
    pub(crate) fn allows(&self, uid: &str) -> bool {
        matches!(self, Replace::First(first) if first == uid)
    }

    /// Amend `action`, classified from `settled`, for a replacing call; a delete it returns
    /// spends the authorisation.
    pub(crate) fn amend(&mut self, action: Action, settled: &SettledPod) -> Action {
        let pod = settled.pod();
        let first = self.allows(pod.fence().uid());
        let amended = match action {
            Action::NoOp {
                intent_matches: false,
                ..
            } if first => Action::Delete(pod.deletion()),
            // Row 8 (the wedge escape) for a pod this call did not first observe: a concurrent
            // deploy's fresh pod; deleting it would start a delete loop between the two.
            Action::Delete(_)
                if !first && settled.startup() == StartupState::NeverStartedRecoverable =>
            {
                Action::Observe {
                    name: pod.name().to_owned(),
                }
            }
            action => action,
        };
        if first && matches!(amended, Action::Delete(_)) {
            *self = Replace::Spent;
        }
        amended
    }
}

#[cfg(test)]
mod tests {
    //! The replace rule, one test per case.

    use super::*;
    use crate::action::classify;
    use crate::testkit::{
        INTENT, OTHER_INTENT, marks, own_pod, running, settled, terminated, waiting,
    };

    fn other_intent(uid: &str, agent: Option<crate::facts::ContainerState>) -> SettledPod {
        let mut pod = own_pod(agent);
        pod.marks = marks(crate::testkit::POD, uid, "7");
        pod.marks.create_intent = Some(OTHER_INTENT.to_owned());
        settled(&pod)
    }

    fn amend(replace: &mut Replace, pod: &SettledPod) -> Action {
        replace.amend(classify(Some(pod), INTENT), pod)
    }

    /// Once a read shows the first observed pod gone (the name absent, or another uid under it),
    /// no later read authorises a delete, even one that shows that uid again (which a real
    /// server never does, but arbitrary answers may).
    #[test]
    fn a_first_pod_read_gone_authorises_nothing_more() {
        for later in [None, Some("u9")] {
            let mut replace = Replace::default();
            replace.observe(Some("u1"));
            assert!(replace.allows("u1"));
            replace.observe(Some("u1"));
            assert!(replace.allows("u1"), "the same pod again");
            replace.observe(later);
            assert_eq!(replace, Replace::Spent, "{later:?}");
            replace.observe(Some("u1"));
            assert!(!replace.allows("u1"), "a uid read again after {later:?}");
        }
    }

    /// The first observed started pod of another intent is deleted with its own fence, once.
    #[test]
    fn the_first_observed_started_pod_of_another_intent_is_deleted_once() {
        let mut replace = Replace::default();
        replace.observe(Some("u1"));
        replace.observe(Some("u1"));
        let pod = other_intent("u1", running());
        match amend(&mut replace, &pod) {
            Action::Delete(deletion) => {
                assert_eq!(deletion.fence().uid(), "u1");
                assert_eq!(deletion.fence().resource_version(), "7");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(replace, Replace::Spent);
        assert!(matches!(
            amend(&mut replace, &pod),
            Action::NoOp {
                intent_matches: false,
                ..
            }
        ));
    }

    /// A started pod of another intent that this call did not first observe is kept.
    #[test]
    fn a_later_pod_of_another_intent_is_kept() {
        let mut replace = Replace::default();
        replace.observe(None);
        replace.observe(Some("u2"));
        let started = other_intent("u2", running());
        assert!(matches!(
            amend(&mut replace, &started),
            Action::NoOp {
                intent_matches: false,
                ..
            }
        ));
        let mut replace = Replace::First("u1".into());
        let pending = other_intent("u2", waiting(Some("ContainerCreating"), None));
        assert!(
            matches!(amend(&mut replace, &pending), Action::Observe { .. }),
            "row 8 of a concurrent deploy's pod: observed, not deleted"
        );
        assert_eq!(replace, Replace::First("u1".into()));
    }

    /// Row 8 for the first observed pod stays a delete and spends the authorisation; rows 4
    /// and 5 are deletes whoever created the pod; a matching intent is a no-op.
    #[test]
    fn other_rows_are_unchanged() {
        let mut replace = Replace::First("u1".into());
        let pending = other_intent("u1", waiting(Some("ContainerCreating"), None));
        assert!(matches!(amend(&mut replace, &pending), Action::Delete(_)));
        assert_eq!(replace, Replace::Spent);
        let dead = other_intent("u9", terminated(1, Some("Error")));
        assert!(matches!(amend(&mut replace, &dead), Action::Delete(_)));
        let mut replace = Replace::First("u1".into());
        let same = settled(&own_pod(running()));
        assert!(matches!(
            amend(&mut replace, &same),
            Action::NoOp {
                intent_matches: true,
                ..
            }
        ));
        assert_eq!(replace, Replace::First("u1".into()), "nothing spent");
        let unread = Replace::default();
        assert!(!unread.allows("u1"));
    }

    /// Rule 6: the own Secret of a pod this call's replace deletes, or that it waits for (row 2,
    /// a pod being deleted), is retired; a kept pod, a delete of row 4 (the GC pass collects a
    /// terminated pod's Secret) and a pod without a Secret retire nothing.
    #[test]
    fn a_deleted_or_deleting_pods_secret_is_retired() {
        let started = other_intent("u1", running());
        let mut replace = Replace::First("u1".into());
        let action = classify(Some(&started), INTENT);
        let amended = replace.amend(action.clone(), &started);
        let retiring = Retiring::of(&amended, true, &started).expect("retired");
        assert_eq!(retiring.uid, "u1");
        assert_eq!(
            Some(retiring.secret),
            started.pod().facts().env_from_secret.clone()
        );
        let kept = replace.amend(action.clone(), &started);
        assert_eq!(Retiring::of(&kept, true, &started), None, "not deleted");
        let dead = other_intent("u1", terminated(1, Some("Error")));
        let action = classify(Some(&dead), INTENT);
        assert!(matches!(action, Action::Delete(_)));
        assert_eq!(
            Retiring::of(&action, false, &dead),
            None,
            "row 4: the GC pass's"
        );
        let mut deleting = own_pod(running());
        deleting.marks = marks(crate::testkit::POD, "u2", "9");
        deleting.marks.deletion_marked = true;
        let deleting = settled(&deleting);
        let action = classify(Some(&deleting), INTENT);
        assert!(matches!(action, Action::AwaitDisappearance { .. }));
        assert_eq!(
            Retiring::of(&action, false, &deleting).map(|r| r.uid),
            Some("u2".into()),
            "row 2"
        );
        let mut bare = own_pod(running());
        bare.marks = marks(crate::testkit::POD, "u1", "7");
        bare.marks.create_intent = Some(OTHER_INTENT.to_owned());
        bare.facts.env_from_secret = None;
        let bare = settled(&bare);
        let mut replace = Replace::First("u1".into());
        let action = classify(Some(&bare), INTENT);
        let amended = replace.amend(action.clone(), &bare);
        assert!(matches!(amended, Action::Delete(_)));
        assert_eq!(Retiring::of(&amended, true, &bare), None, "no Secret");
    }
}
