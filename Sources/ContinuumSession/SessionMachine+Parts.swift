import ContinuumCore

extension SessionMachine {
    /// The peer's round being streamed to us, from its OFFER to its DONE: what the OFFER announced, and what has come
    /// of it (for ``SessionAction/progress(records:ofRecords:bytes:ofBytes:)``). Its gaps are checked at the DONE.
    struct PeerRound: Sendable {
        /// Records and bytes the OFFER announced.
        let announced: (records: UInt64, bytes: UInt64)
        /// Records and bytes of the catch-up frames verified since the OFFER.
        var received: (records: UInt64, bytes: UInt64) = (0, 0)
    }

    /// The interest last advertised to the peer (``advertise(_:version:)``), and the version it was computed at.
    struct Advertisement: Sendable {
        /// Per post, the hops the peer was told.
        let interest: [PostID: UInt8]
        let version: UInt64
    }

    /// An author's records the peer announced (HAVE) that may still be missing here: the highest sequence announced,
    /// and when the first announcement not yet repaired came (``repair(ourClock:now:)`` waits for it to age).
    struct Announcement: Sendable {
        var last: UInt64
        let since: ContinuousClock.Instant
    }
}
