//! Unit tests of the mirror rules.

use super::*;

#[test]
fn statuses_follow_cluster_linking() {
    use MirrorStatusKind as K;
    let s = |st, f, p| mirror_status(st, f, p).0;
    assert_eq!(s(MirrorState::Active, None, None), K::Active);
    assert_eq!(s(MirrorState::Paused, None, None), K::Paused);
    assert_eq!(
        s(MirrorState::Promoting, None, Some("x")),
        K::PendingStopped
    );
    assert_eq!(s(MirrorState::Promoted, Some("f"), Some("x")), K::Stopped);
    assert_eq!(s(MirrorState::FailedOver, None, Some("x")), K::Stopped);
    assert_eq!(
        s(MirrorState::Active, Some("deleted"), Some("x")),
        K::Failed
    );
    assert_eq!(s(MirrorState::Paused, Some("deleted"), None), K::Failed);
    assert_eq!(
        s(MirrorState::Active, None, Some("x")),
        K::SourceUnavailable
    );
    assert_eq!(
        s(MirrorState::Paused, None, Some("x")),
        K::SourceUnavailable
    );
    let (_, why) = mirror_status(MirrorState::Active, None, Some("timed out"));
    assert_eq!(
        why.as_deref(),
        Some("source cluster unreachable: timed out")
    );
    let mut r = MirrorRecord::new("l", "a", "t", true, 0);
    assert_eq!(r.failure(), None);
    r.diverged.insert(3, "foreign write".into());
    assert_eq!(
        r.failure().as_deref(),
        Some("partition 3 stopped: foreign write")
    );
    r.failed = Some("source topic deleted".into());
    assert_eq!(r.failure().as_deref(), Some("source topic deleted"));
    assert_eq!(K::SourceUnavailable.as_str(), "SOURCE_UNAVAILABLE");
}
use crate::forward::SourceOffsets;

fn record() -> MirrorRecord {
    MirrorRecord::new("west-link", "west", "west-trades", true, 1)
}

#[test]
fn commands_move_states_and_stopped_is_final() {
    let mut r = record();
    let cmd = |action, at_ms| MirrorCommand {
        action,
        at_ms,
        reverse: None,
    };
    assert!(r.apply(&cmd(MirrorAction::Pause, 10), 11));
    assert_eq!(r.state, MirrorState::Paused);
    assert!(
        !r.apply(&cmd(MirrorAction::Resume, 10), 12),
        "same command twice"
    );
    assert!(r.apply(&cmd(MirrorAction::Resume, 20), 21));
    assert_eq!(r.state, MirrorState::Active);
    assert!(r.apply(&cmd(MirrorAction::Promote, 30), 31));
    assert_eq!(r.state, MirrorState::Promoting);
    r.state = MirrorState::Promoted;
    for a in [
        MirrorAction::Pause,
        MirrorAction::Resume,
        MirrorAction::Promote,
        MirrorAction::Failover,
    ] {
        assert!(!r.apply(&cmd(a, 100), 101));
        assert_eq!(r.state, MirrorState::Promoted);
    }
    let mut r = record();
    assert!(r.apply(&cmd(MirrorAction::Failover, 5), 6));
    assert!(r.state.is_stopped());
    assert!(!r.state.moves_data());
}

#[test]
fn reversals_finish_as_reversed_and_need_a_link() {
    let link = Reversal {
        link: "east-link".into(),
        paused: false,
    };
    let cmd = |action, at_ms, reverse: Option<Reversal>| MirrorCommand {
        action,
        at_ms,
        reverse,
    };
    let mut r = record();
    assert!(!r.apply(&cmd(MirrorAction::ReverseAndStart, 5, None), 6));
    assert_eq!(r.state, MirrorState::Active, "no link, nothing applied");
    assert!(r.apply(
        &cmd(MirrorAction::ReverseAndStart, 7, Some(link.clone())),
        8
    ));
    assert_eq!(r.state, MirrorState::Reversing);
    assert!(r.state.moves_data() && r.state.is_finishing());
    assert_eq!(r.reversal.as_ref(), Some(&link));
    assert_eq!(
        mirror_status(r.state, None, None).0,
        MirrorStatusKind::PendingStopped
    );
    r.state = MirrorState::Reversed;
    assert!(r.state.is_stopped() && !r.state.moves_data());
    assert!(r.has_done(&cmd(MirrorAction::ReverseAndPause, 7, None)));
    assert_eq!(
        mirror_status(r.state, None, None),
        (MirrorStatusKind::Stopped, Some("reversed".into()))
    );
    // The mirror the reversal starts the other way: from where this one stopped.
    let starts = [(0, [120, 120]), (1, [80, 80])].into_iter().collect();
    let paused = Reversal {
        paused: true,
        ..link
    };
    let back = MirrorRecord::reversed(&paused, "east", "west-trades", starts, true, 9);
    assert_eq!(back.state, MirrorState::Paused);
    assert_eq!(back.link, "east-link");
    assert_eq!(back.source_cluster, "east");
    assert_eq!(
        (back.start_of(0), back.start_of(1), back.start_of(2)),
        (Some((120, 120)), Some((80, 80)), None)
    );
    let j = serde_json::to_string(&back).unwrap();
    assert_eq!(serde_json::from_str::<MirrorRecord>(&j).unwrap(), back);
}

#[test]
fn the_loop_check_mirrors_back_only_what_a_reversal_handed_over() {
    let live = record();
    let mut ended = record();
    ended.state = MirrorState::Reversed;
    let mut promoted = record();
    promoted.state = MirrorState::Promoted;
    let starts: std::collections::BTreeMap<i32, [i64; 2]> = [(0, [5, 5])].into_iter().collect();
    let reversal = Reversal {
        link: "east-link".into(),
        paused: false,
    };
    let handed = MirrorRecord::reversed(&reversal, "east", "t", starts, true, 1);
    let mut handed_paused = handed.clone();
    handed_paused.state = MirrorState::Paused;
    let mut own_plain = record();
    own_plain.start_at.clear();
    // Not a mirror from the target: an ordinary topic, mirrored as usual.
    assert!(!mirrors_back(None, None));
    assert!(!mirrors_back(None, Some(&own_plain)));
    // A live mirror from the target: never, whatever our own record says.
    assert!(mirrors_back(Some(&live), None));
    assert!(mirrors_back(Some(&live), Some(&handed)));
    // An ended mirror from the target: only when a reversal handed it over.
    assert!(mirrors_back(Some(&promoted), None));
    assert!(mirrors_back(Some(&ended), None));
    assert!(mirrors_back(Some(&ended), Some(&own_plain)));
    assert!(!mirrors_back(Some(&ended), Some(&handed)));
    assert!(!mirrors_back(Some(&ended), Some(&handed_paused)));
    let mut handed_ended = handed;
    handed_ended.state = MirrorState::Reversed;
    assert!(mirrors_back(Some(&ended), Some(&handed_ended)));
}

#[test]
fn record_json_round_trip() {
    let mut r = record();
    r.reason = Some("why".into());
    let j = serde_json::to_string(&r).unwrap();
    assert!(j.contains("\"state\":\"active\""), "{j}");
    assert_eq!(serde_json::from_str::<MirrorRecord>(&j).unwrap(), r);
    let c = MirrorCommand {
        action: MirrorAction::Failover,
        at_ms: 7,
        reverse: None,
    };
    let j = serde_json::to_string(&c).unwrap();
    assert_eq!(j, r#"{"action":"failover","at_ms":7}"#);
}

#[test]
fn keys() {
    assert_eq!(state_key("west", "t|x"), "mirror|west|t|x");
    assert_eq!(
        topic_of_key("mirror|west|t|x", "mirror", "west"),
        Some("t|x")
    );
    assert_eq!(topic_of_key("mirror|westx|t", "mirror", "west"), None);
    assert_eq!(
        topic_of_key(&command_key("w", "a"), "mirror-command", "w"),
        Some("a")
    );
    assert_eq!(topic_of_key("mirror-command|w|a", "mirror", "w"), None);
}

#[test]
fn group_filters_cluster_linking_form() {
    let f = GroupFilters::parse(
        r#"{"groupFilters":[{"name":"*","patternType":"LITERAL","filterType":"INCLUDE"},
            {"name":"someGroup","patternType":"LITERAL","filterType":"EXCLUDE"},
            {"name":"tmp-","patternType":"PREFIXED","filterType":"EXCLUDE"}]}"#,
    )
    .unwrap();
    assert!(f.includes("other"));
    assert!(!f.includes("someGroup"));
    assert!(!f.includes("tmp-1"));
    assert!(f.includes("tmp"));
    let only =
        GroupFilters::parse(r#"{"groupFilters":[{"name":"app-","patternType":"PREFIXED"}]}"#)
            .unwrap();
    assert!(only.includes("app-1"));
    assert!(!only.includes("other"));
    assert!(
        !GroupFilters::default().includes("g"),
        "no filter, no group"
    );
    assert!(GroupFilters::all().includes("g"));
    // A literal `*` only means "all" as a whole name; prefixed `*` is a real prefix.
    let star =
        GroupFilters::parse(r#"{"groupFilters":[{"name":"*","patternType":"PREFIXED"}]}"#).unwrap();
    assert!(!star.includes("g"));
    assert!(star.includes("*g"));
    assert_eq!(GroupFilters::parse(&f.to_json()).unwrap(), f);
}

#[test]
fn group_filters_errors() {
    for bad in [
        "",
        "[]",
        r#"{"groupFilters":[{"name":"x","patternType":"REGEX"}]}"#,
        r#"{"groupFilters":[{"name":"x","filterType":"MAYBE"}]}"#,
        r#"{"groupFilters":[{"name":""}]}"#,
    ] {
        let e = GroupFilters::parse(bad).unwrap_err();
        assert!(!e.is_empty(), "{bad}");
    }
    let e = GroupFilters::parse(r#"{"groupFilters":[{"name":"x","patternType":"REGEX"}]}"#)
        .unwrap_err();
    assert!(e.contains("LITERAL|PREFIXED"), "{e}");
}

fn contiguous(first: i64, count: i64) -> SourceOffsets {
    SourceOffsets::Contiguous { first, count }
}

#[test]
fn offsets_modes() {
    let mut m = OffsetMap::new(0, 0);
    assert_eq!(offsets_mode(&m, true), OffsetsMode::Identical);
    m.record_batch(&contiguous(0, 10), 0).unwrap();
    m.record_batch(&contiguous(10, 5), 10).unwrap();
    assert_eq!(offsets_mode(&m, true), OffsetsMode::Identical);
    assert_eq!(
        offsets_mode(&m, false),
        OffsetsMode::Mapped(MappedReason::TopicExisted)
    );
    // A dropped control batch at 15: the tail no longer lines up.
    m.record_dropped(15, 16);
    assert_eq!(
        offsets_mode(&m, true),
        OffsetsMode::Mapped(MappedReason::DivergedAt(15))
    );
    m.record_batch(&contiguous(16, 4), 15).unwrap();
    assert_eq!(
        offsets_mode(&m, true),
        OffsetsMode::Mapped(MappedReason::DivergedAt(15))
    );
    let late = OffsetMap::new(40, 0);
    assert_eq!(
        offsets_mode(&late, true),
        OffsetsMode::Mapped(MappedReason::SourceStartedAt(40))
    );
    // A listed (compacted) batch renumbered contiguously.
    let mut c = OffsetMap::new(0, 0);
    c.record_batch(&SourceOffsets::Listed(vec![0, 1, 3]), 0)
        .unwrap();
    assert_eq!(
        offsets_mode(&c, true),
        OffsetsMode::Mapped(MappedReason::DivergedAt(2))
    );
    // A mirror started by a reversal at 40 is identical from there (both sides at 40).
    assert_ne!(offsets_mode_from(&late, true, 40), OffsetsMode::Identical);
    assert_eq!(
        offsets_mode_from(&OffsetMap::new(40, 40), true, 40),
        OffsetsMode::Identical
    );
    let mut rec = record();
    assert_eq!(
        rec.offsets_mode(0, &late),
        OffsetsMode::Mapped(MappedReason::SourceStartedAt(40))
    );
    rec.start_at.insert(0, [40, 0]);
    assert_ne!(rec.offsets_mode(0, &late), OffsetsMode::Identical);
    let reversed_at_40 = OffsetMap::new(40, 40);
    rec.start_at.insert(0, [40, 40]);
    assert_eq!(rec.offsets_mode(0, &reversed_at_40), OffsetsMode::Identical);
    assert_eq!(
        rec.offsets_mode(0, &m),
        offsets_mode(&m, true),
        "a map from 0"
    );
    assert!(OffsetsMode::Mapped(MappedReason::DivergedAt(2))
        .to_string()
        .contains("source offset 2"));
}
