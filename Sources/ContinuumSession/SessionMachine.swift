import ContinuumCore
import ContinuumWire

/// The rules of one session with one peer, after the handshake, as a value: it takes one input at a time (a message
/// from the peer, the result of a verification, a store or a clock read, a timer) and returns the
/// ``SessionAction``s to perform. It holds no channel, no store and no clock of its own; its executor
/// (`PeerSession`) performs the actions and reports their results. PROTOCOL.md §7 is the contract it keeps.
///
/// What it decides:
/// - **Receiving.** Each message is charged to the peer's ``PeerBudget`` first. Records are verified, gathered into
///   batches and stored in one transaction, and every RECORDS frame is acknowledged once stored. A message that is
///   not a record is acted on only after everything before it is stored (a DONE's gap check must see the round's
///   records); while a verification or a store is under way, messages wait in order.
/// - **Rounds.** Our rounds send our clock, whole or as the change since the clock the peer last received
///   (CLOCK_SINCE); the peer's rounds are answered in order, one at a time, with the records its clock lacks, or
///   with nothing when it asks the same question as last time and nothing changed here ("request skipping").
/// - **Sending.** What the peer is known to hold (its clock, its ACKs, the records it sent) and what was sent down
///   this connection are never sent again: each record crosses the connection at most once per direction.
/// - **Bounds.** Rounds and REQUESTs wait in a queue of ``Configuration/maxQueuedStreams``, photo and thumbnail
///   requests in one of ``Configuration/maxQueuedServes``; one more is refused with ERROR *over budget*.
public struct SessionMachine<Record: SessionRecord>: Sendable {
    public typealias Action = SessionAction<Record>

    public struct Configuration: Sendable {
        /// RECORDS frames sent and not yet acknowledged, at most.
        public var window = 6
        /// Records stored in one transaction, at most, while a round streams.
        public var flushRecords = 3000
        /// Verified records that may wait for the next store while one is under way, at most: a frame of records is
        /// read and verified beside a store only below this (the memory that the overlap of the two costs).
        public var readAheadRecords = 1000
        public var maxQueuedStreams = 16
        public var maxQueuedServes = 256
        /// Workers serving photos and thumbnails at once (as many as a fetcher asks for at once).
        public var maxServers = 8
        public var budget = PeerBudget.Limits()
        /// Tree push (PROTOCOL.md §7.8.17): a live frame that brings only records held already prunes the link, so
        /// new records cross it as HAVE only. Off: every link stays eager (a peer's prune is still obeyed).
        public var treePush = true
        /// Authors whose announced records wait for the repair timer, at most; announcements of more are ignored
        /// (rounds find those records).
        public var maxAnnouncedAuthors = 100_000
        /// How long a record announced by HAVE may take to arrive by the tree before it is pulled.
        public var treeRepairDelay: Duration = .milliseconds(200)

        public init() {}
    }

    public enum Phase: Hashable, Sendable {
        case open
        /// Ended (by an ERROR either way, or by the executor): inputs are ignored.
        case closed
    }

    public let peer: AuthorID
    public let configuration: Configuration
    public internal(set) var phase = Phase.open
    var budget: PeerBudget

    // What the peer holds, and what was sent to it.
    /// The peer's clock, merged with every ACK and every record it sent.
    public internal(set) var peerClock = VectorClock()
    /// Per author, the records sent down this connection contiguously from 1; and single ones beyond.
    var sentClock = VectorClock()
    var sentIDs: Set<RecordID> = []
    /// RECORDS frames sent and not yet acknowledged.
    public internal(set) var inflight = 0

    // Rounds.
    var round: UInt32 = 0
    /// Our clock at the start of each of our rounds not yet done, to send whole on CLOCK_UNKNOWN.
    var roundClocks: [UInt32: VectorClock] = [:]
    var finishedRounds: Set<UInt32> = []
    /// The clocks last sent to and received from the peer, kept between sessions.
    var lastSent: VectorClock?
    var lastReceived: VectorClock?
    /// The digest of ``lastReceived`` (what a CLOCK_SINCE names), once computed.
    var lastReceivedDigest: ClockDigest?
    /// Whether a clock of the peer was merged into ``peerClock`` in this session.
    var receivedClockMerged = false
    /// The peer's round being streamed to us (OFFER seen, DONE not).
    var peerRound: PeerRound?
    /// The last clock of the peer answered, and ours then ("request skipping").
    var answered: (theirs: VectorClock, ours: VectorClock)?
    /// Per author, the highest sequence asked for as a gap in live gossip.
    var requestedGaps = VectorClock()
    /// What the ACKs sent to the peer said this node holds: with ``lastSent``, what the peer knows it holds.
    var acknowledged = VectorClock()

    // Receiving.
    /// The peer's records on their way to the store: the verification and store under way, the messages that wait
    /// for them, the verified records that wait for the next store.
    var intake = Intake()

    // Work for the peer.
    var streamJobs: [StreamJob] = []
    var streaming = false
    var serveJobs: [ServeJob] = []
    var servers = 0

    // Interest and gossip.
    /// The interest last advertised to the peer; nil before the first.
    var advertisement: Advertisement?
    var gossipSkipped = false

    // Photos and thumbnails asked of the peer.
    /// Per photo, the PHOTO_WANTs sent and not yet ended by PHOTO_END or PHOTO_MISSING: PHOTO_DATA of any other
    /// photo is refused.
    var photosAsked: [AssetHash: Int] = [:]
    /// Per thumbnail, the THUMB_WANTs sent and not yet answered: THUMB_DATA of any other is refused.
    var thumbnailsAsked: [AssetHash: Int] = [:]
    /// Per small photo, the PHOTOS_WANTs that named it and that no PHOTOS has answered for it: a PHOTOS entry of any
    /// other photo is refused.
    var photosBatchAsked: [AssetHash: Int] = [:]

    // Tree push (PROTOCOL.md §7.8.17).
    /// How new records go to the peer: eagerly (RECORDS, PUSH), or lazily (HAVE), as the peer's TREE last said.
    public internal(set) var eager = true
    /// How this side last asked the peer to send: eagerly, until a duplicate made it prune the link.
    public internal(set) var peerEager = true
    /// Per author, the records the peer announced (HAVE) that may still be missing here.
    var announcedByPeer: [AuthorID: Announcement] = [:]
    var repairScheduled = false

    public internal(set) var stats = SessionStats()

    /// A session with `peer`; `lastSent` and `lastReceived` are the clocks the store kept from the last session.
    public init(
        peer: AuthorID,
        configuration: Configuration = Configuration(),
        lastSent: VectorClock? = nil,
        lastReceived: VectorClock? = nil
    ) {
        self.peer = peer
        self.configuration = configuration
        self.budget = PeerBudget(limits: configuration.budget)
        self.lastSent = lastSent
        self.lastReceived = lastReceived
    }

    /// True while inputs from the peer wait for a verification or a store: the executor reads no more until the
    /// machine is idle again, or ``readsBesideStore``.
    public var isBusy: Bool { intake.isBusy }

    /// True while a store is under way and a frame of records read now would be verified beside it: the executor
    /// may read the next message although the machine is busy. (Any other message read then waits for the store.)
    public var readsBesideStore: Bool { intake.mayVerifyBesideStore(below: configuration.readAheadRecords) }

    /// True while the peer streams a round to us (OFFER seen, DONE not): gaps are checked at its DONE.
    public var receivingRound: Bool { peerRound != nil }

    /// True while a verification is under way.
    public var verifying: Bool { intake.isVerifying }

    /// True when another RECORDS frame may be sent.
    public var windowOpen: Bool { inflight < configuration.window }

    public func isFinished(round number: UInt32) -> Bool { finishedRounds.contains(number) }

    /// Ends the session from this side (the engine dropped it, or the connection closed).
    public mutating func close() {
        phase = .closed
        streamJobs.removeAll()
        serveJobs.removeAll()
        intake.drop()
    }

    /// Refuses the peer: ERROR, then the end (also for what the executor's collaborators find wrong in a message:
    /// an interest over its limit, a thumbnail that is not a JPEG).
    public mutating func refuse(_ error: WireError) -> [Action] {
        guard phase == .open else { return [] }
        close()
        return [.close(error)]
    }

    /// This node failed (storage): the peer is told so, and the session ends.
    public mutating func failed(while doing: String) -> [Action] {
        refuse(WireError(.internal, "the node failed while \(doing)"))
    }

    /// The counters since the last ``takeStats()``, left as they are.
    public var currentStats: SessionStats { stats }

    public mutating func takeStats() -> SessionStats {
        defer { stats = SessionStats(pushesSent: stats.pushesSent, pushesReceived: stats.pushesReceived) }
        return stats
    }
}

extension SessionStats {
    init(pushesSent: Int, pushesReceived: Int) {
        self.init()
        self.pushesSent = pushesSent
        self.pushesReceived = pushesReceived
    }
}

extension VectorClock {
    /// Raises each entry to `other`'s, in place: in time proportional to `other`'s entries (``merging(_:)`` copies
    /// this clock first, which a peer's clock of many authors would make cost more with every message).
    mutating func merge(_ other: VectorClock) {
        for (author, sequence) in other.heads { advance(author, to: sequence) }
    }
}

extension WireMessage {
    var carriesRecords: Bool {
        switch self {
        case .records, .push: true
        default: false
        }
    }
}
