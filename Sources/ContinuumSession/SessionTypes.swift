import ContinuumCore
import ContinuumWire

/// A record as the session rules see it: who wrote it, where it sits in its author's log, and its id. The bytes
/// travel beside it; the rules never look inside them.
public struct RecordRef: Hashable, Sendable {
    public let id: RecordID
    public let author: AuthorID
    public let sequence: UInt64

    public init(id: RecordID, author: AuthorID, sequence: UInt64) {
        self.id = id
        self.author = author
        self.sequence = sequence
    }
}

/// A record this node may send: its place in the log, and its signed bytes.
public struct OutgoingRecord: Hashable, Sendable {
    public let ref: RecordRef
    public let bytes: [UInt8]

    public init(_ ref: RecordRef, bytes: [UInt8]) {
        self.ref = ref
        self.bytes = bytes
    }
}

/// A record whose signature was checked: what the session hands to storage. The rules read only its ``ref``.
public protocol SessionRecord: Hashable, Sendable {
    var ref: RecordRef { get }
}

extension VerifiedRecord: SessionRecord {
    public var ref: RecordRef { RecordRef(id: id, author: header.author, sequence: header.sequence) }
}

/// Verified records to store in one transaction, grouped by how they came, in the order they came.
public struct StoreBatch<Record: SessionRecord>: Hashable, Sendable {
    public var parts: [Part]

    public struct Part: Hashable, Sendable {
        public let delivery: Delivery
        /// The records to store, verified.
        public let records: [Record]
        /// Records of the frame that this node held already (the same bytes): never verified nor stored, but the
        /// peer holds them, and a frame of them alone is a duplicate all the same (tree push, ACK).
        public let held: [RecordRef]

        public init(delivery: Delivery, records: [Record], held: [RecordRef] = []) {
            self.delivery = delivery
            self.records = records
            self.held = held
        }

        /// Every record of the part: those to store, then those held already.
        public var refs: [RecordRef] { records.map(\.ref) + held }
    }

    public init(parts: [Part]) { self.parts = parts }

    public var isEmpty: Bool { parts.isEmpty }
    /// The records to store.
    public var count: Int { parts.reduce(0) { $0 + $1.records.count } }
    public var records: [Record] { parts.flatMap(\.records) }
    /// Every record the peer sent in the batch's frames, those held already included.
    public var refs: [RecordRef] { parts.flatMap(\.refs) }
}

/// What storing a ``StoreBatch`` did, as the rules need it.
public struct StoreOutcome: Hashable, Sendable {
    /// Records newly stored (not held before).
    public var stored: Int
    /// Records stored but ignored by every view because they break a rule, and the rule.
    public var brokeRules: [RecordID: String]
    /// This node's clock after the batch.
    public var clock: VectorClock
    /// The authors of the batch that are the peer's own logs (its log keys in its groups, PROTOCOL.md §2.7).
    public var peerLogs: Set<AuthorID>

    /// Every record of the batch was held already (none new, none held back, none a fork): what makes tree push
    /// prune a link.
    public var duplicatesOnly: Bool
    /// The peer is the records' parent in the broadcast tree (``PeerView/treeParent(root:)``): its copies came late
    /// (this node pulled them elsewhere first), not by a wrong path, so the link is not pruned.
    public var fromTreeParent: Bool
    /// The peer is one of this node's neighbours in the overlay. Only such links are pruned: a session off the ring
    /// (`--peer HOST:PORT`, a join's, a peer not known by id) is given every record whole, and a false prune there
    /// would cost every record after it the repair delay.
    public var fromNeighbour: Bool
    /// Records of the batch that were verified and then brought nothing because they were of groups the session
    /// does not share: the peer is charged for their verification (``PeerBudget/wastedRecord``).
    public var wasted: Int
    /// Copies of held records that the lookup before verification did not find: another session's copy of the same
    /// record was verified or stored meanwhile (two peers answering the same round, two neighbours relaying one
    /// import). The peer could not know; it is charged as for a crossing copy (``PeerBudget/heldRecordCrossing``).
    public var raced: Int

    /// `duplicatesOnly` nil: when nothing was newly stored.
    public init(
        stored: Int,
        brokeRules: [RecordID: String] = [:],
        clock: VectorClock,
        peerLogs: Set<AuthorID> = [],
        duplicatesOnly: Bool? = nil,
        fromTreeParent: Bool = false,
        fromNeighbour: Bool = true,
        wasted: Int = 0,
        raced: Int = 0
    ) {
        self.stored = stored
        self.brokeRules = brokeRules
        self.clock = clock
        self.peerLogs = peerLogs
        self.duplicatesOnly = duplicatesOnly ?? (stored == 0)
        self.fromTreeParent = fromTreeParent
        self.fromNeighbour = fromNeighbour
        self.wasted = wasted
        self.raced = raced
    }
}

/// Work the session queues for its peer: answering its rounds and REQUESTs with records.
public enum StreamJob: Hashable, Sendable {
    /// Answer the peer's clock of a round: OFFER, the records it lacks, DONE.
    case round(UInt32, theirs: VectorClock)
    /// Send the records in these ranges.
    case request([LogRange])
    /// Send what the peer lacks by what we know of its clock (``SessionMachine/catchUpRanges(ours:)``): after live
    /// gossip was skipped while it was behind.
    case catchUp
}

/// Work the session queues for its peer: serving a photo or a thumbnail.
public enum ServeJob: Hashable, Sendable {
    case photo(AssetHash, from: UInt64)
    case thumbnail(AssetHash)
    /// Small photos asked for whole, many at once (PHOTOS_WANT).
    case photos([AssetHash])
}

/// A photo or thumbnail message from the peer, for the photo fetcher.
public enum PhotoMessage: Hashable, Sendable {
    case data(AssetHash, offset: UInt64, chunk: [UInt8])
    case end(AssetHash, totalBytes: UInt64)
    case missing(AssetHash)
    case thumbnail(AssetHash, [UInt8])
    case thumbnailMissing(AssetHash)
    /// Small photos asked for with PHOTOS_WANT: each whole, or nil bytes when the peer does not give it.
    case photos([SmallPhoto])
}

/// How to answer a round of the peer (``SessionMachine/plan(round:theirs:ours:)``).
public enum RoundPlan: Hashable, Sendable {
    /// The same question as last time and nothing new here ("request skipping"): OFFER nothing, then DONE.
    case nothing
    /// Stream these ranges, in this order, after an OFFER of their size.
    case ranges([LogRange])
}

/// Counters of a session, for the peer list and the logs.
public struct SessionStats: Hashable, Sendable {
    public var recordsIn: Int64 = 0
    public var recordsOut: Int64 = 0
    public var bytesIn: Int64 = 0
    public var bytesOut: Int64 = 0
    /// Records pushed to the peer, and pushed by it.
    public var pushesSent = 0
    public var pushesReceived = 0
    /// Tree push: links this side pruned (a duplicate came), and grafted back (an announced record did not).
    public var prunes = 0
    public var grafts = 0
    /// Records announced to the peer with HAVE instead of sent.
    public var announced = 0

    public init() {}
}
