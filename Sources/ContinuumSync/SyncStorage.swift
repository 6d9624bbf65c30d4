import ContinuumCore
import ContinuumSession
import ContinuumWire
import Foundation

/// What sync reads from storage and writes to it: the port through which the engine, its sessions and the photo
/// fetcher see the store, split by who uses what. Sync owns it; the node conforms its store to all of it where it is
/// composed (`ContinuumNode.NodeSyncStorage`). Every call may fail: a failure is an error that the caller handles
/// visibly (ERROR and close, or a logged retry), never a default value.
public typealias SyncStorage = SessionStorage & PhotoStorage & EngineStorage

/// What one session needs: the record log as its peer may see it, the clocks exchanged with that peer, the groups of
/// posts named in an INTEREST, and whether a photo may be served. Each session sees it through a ``ScopedStorage``
/// that shows only the groups it shares with its peer.
public protocol SessionStorage: Sendable {
    /// This node's clock: per author, the contiguous prefix of the log it holds.
    func clock() async throws -> VectorClock
    /// How many records, and bytes, lie in these ranges.
    func byteCount(of ranges: [AuthorID: ClosedRange<UInt64>]) async throws -> (records: UInt64, bytes: UInt64)
    /// Up to `limit` records (and `maxBytes`) of `author` in `range`, in log order; those not held are skipped.
    func storedRecords(
        of author: AuthorID,
        in range: ClosedRange<UInt64>,
        limit: Int,
        maxBytes: Int
    ) async throws
        -> [StoredRecord]
    /// Whether this node may hold a record of `author`'s log at `sequence` or above: false when it surely holds
    /// none that it could have written itself. A hint that spares a lookup of records a peer sends; a wrong true
    /// costs a lookup, a wrong false a verification, and neither changes what is stored.
    func mayHold(_ author: AuthorID, from sequence: UInt64) async -> Bool
    /// Stores a batch of verified records in one transaction; what it did, and this node's clock after it.
    func ingest(_ batch: StoreBatch<VerifiedRecord>) async throws -> Ingested
    /// The clocks last sent to and received from `peer`, as WireCodec's clock bytes.
    func peerClocks(_ peer: AuthorID) async throws -> (sent: [UInt8]?, received: [UInt8]?)
    func setPeerClock(_ peer: AuthorID, sent: [UInt8]?, received: [UInt8]?) async throws
    /// The groups of these posts, for those whose post and author are held.
    func groups(ofPosts posts: [PostID]) async throws -> [PostID: GroupID]
    /// Where a held photo's file is.
    func photoURL(_ hash: AssetHash) -> URL
    /// The bytes of a held photo of at most 64 KiB (`WireLimits.smallPhotoBytes`), wherever it is kept; nil when it
    /// is not here or is larger.
    func smallPhoto(_ hash: AssetHash) async throws -> [UInt8]?
    /// The bytes of each of these photos that the peer may have: here, of at most 64 KiB, and shown
    /// (``isPhotoShown(_:)``); looked up at once for a whole PHOTOS_WANT.
    func givenPhotos(_ hashes: [AssetHash]) async throws -> [AssetHash: [UInt8]]
    /// Whether a live post shows the photo. One that none shows was erased (PROTOCOL.md §2.6): it is neither
    /// fetched nor served, and nothing about it is kept.
    func isPhotoShown(_ hash: AssetHash) async throws -> Bool
}

/// What the photo fetcher needs: the photos missing, what each peer could not supply, and the files' places.
public protocol PhotoStorage: Sendable {
    /// The photos that live posts here show and that are not here, newest first, at most `limit`; `photos` is nil
    /// when nothing they depend on changed since the call that returned `version` (then the caller's list stands).
    func missingPhotos(
        limit: Int,
        changedSince version: Int64?
    ) async throws -> (version: Int64, photos: [MissingPhoto]?)
    /// The photos missing here that the live posts `posts` show, as a look gives them, without reading every other
    /// live post; an erased or unknown post gives none.
    func missingPhotos(shownBy posts: [PostID]) async throws -> [MissingPhoto]
    /// What `peer` could not supply, and when to ask it again.
    func peerLacks(_ peer: AuthorID) async throws -> [PeerLack]
    /// Saves lacks (an entry with 0 attempts is removed).
    func saveLacks(_ lacks: [PeerLack]) async throws
    /// Where a held photo's file is.
    func photoURL(_ hash: AssetHash) -> URL
    /// Where partial downloads are kept until they are whole.
    var partialPhotos: URL { get }
    /// Moves whole, checked photo files (written, not yet synced) into place and records them as available, only
    /// while a live post shows each; one sync for the batch. Returns, in order, whether each was kept (a photo
    /// erased while it came is dropped).
    func commitPhotos(_ photos: [(file: URL, hash: AssetHash, bytes: Int64)]) async throws -> [Bool]
    /// Records small photos that came whole (PHOTOS), each checked against its hash, with their bytes, in one
    /// transaction, only while a live post shows each. Returns, in order, whether each is here now.
    func commitSmallPhotos(_ photos: [(hash: AssetHash, bytes: [UInt8])]) async throws -> [Bool]
    /// Whether a live post shows the photo (see ``SessionStorage/isPhotoShown(_:)``).
    func isPhotoShown(_ hash: AssetHash) async throws -> Bool
    /// Whether a live post by a log of one of `groups` shows the photo: what a peer sharing those groups may fetch.
    func isPhotoShown(_ hash: AssetHash, inGroups groups: Set<GroupID>) async throws -> Bool
    /// The bytes of each of these photos that is here, of at most 64 KiB, and shown by a live post by a log of one
    /// of `groups` (``SessionStorage/givenPhotos(_:)`` for a session that shares those groups).
    func smallPhotos(_ hashes: [AssetHash], shownInGroups groups: Set<GroupID>) async throws -> [AssetHash: [UInt8]]
}

/// What the engine needs besides its sessions and its fetcher: new records for live gossip, the peers it met,
/// follows and notifications, and membership and joins.
public protocol EngineStorage: Sendable {
    /// Records stored after `rowid`, in the order they were stored (for live gossip).
    func records(after rowid: Int64, limit: Int) async throws -> [StoredRecord]
    func lastRecordRowid() async throws -> Int64
    /// Something that changes whenever anything is written to the store, by any process, cheap to read (no query):
    /// the engine's poll for other processes' writes reads the store only when it changed. Nil: unknown (read).
    func writeStamp() -> [Int]?
    func rememberPeer(_ peer: AuthorID, name: String?, host: String, port: Int, state: String) async throws
    func updatePeer(_ peer: AuthorID, state: String, stats: SessionStats) async throws
    func followedPosts() async throws -> Set<PostID>
    /// Every post's follow state this node knows, with when it last changed (for FOLLOWS, newest first, at most
    /// 1,000).
    func followStates() async throws -> [FollowEntry]
    /// Takes another device's follow states, the later change winning per post; returns how many changed here.
    func mergeFollows(_ entries: [FollowEntry]) async throws -> Int
    func notifications(after id: Int64) async throws -> [NotificationSummary]
    func lastNotificationID() async throws -> Int64
    /// Who belongs to which group.
    func membershipView() async throws -> MembershipView
    /// The header of this node's own membership record in `group` (what proves to a peer that it is a member).
    func membershipProof(in group: GroupID) async throws -> [UInt8]?
    /// Uses an invite this node made, once: checks it (`proves` checks the joiner's proof against the secret),
    /// signs the record that adds `node` with `log`, and returns the group and the record's bytes. Throws an error
    /// whose description says why an invite is refused.
    func redeemInvite(
        id: [UInt8],
        node: NodeID,
        log: AuthorID,
        proves: @escaping @Sendable (Data) -> Bool
    ) async throws -> (group: GroupID, record: [UInt8])
    /// A node asks to join with `log` (its signature checked): approved (with the record adding it), pending,
    /// denied, or not something this node can approve.
    func askToJoin(
        node: NodeID,
        log: AuthorID,
        name: String?,
        host: String,
        port: Int
    ) async throws
        -> JoinRequestAnswer
    /// The join was accepted: the log key belongs to `group`.
    func completeJoin(log: AuthorID, group: GroupID) async throws
    /// Checks a link code's ticket (`proves` checks the new device's proof against the secret) and returns the
    /// records of this node's account for LINKING. Throws an error whose description says why a link is refused.
    func checkLink(ticket: [UInt8], proves: @escaping @Sendable (Data) -> Bool) async throws -> [[UInt8]]
    /// Uses a link code's ticket once: signs the `device-add` of `device` with its `consent`; returns the record's
    /// bytes and this node's groups.
    func signDeviceAdd(
        ticket: [UInt8],
        device: AuthorID,
        consent: [UInt8],
        proves: @escaping @Sendable (Data) -> Bool
    ) async throws -> (record: [UInt8], groups: [GroupID])
    /// Whether this node can still be linked into an account (its key has signed nothing).
    func canBeLinked() async throws -> Bool
    /// The link was accepted: store the account's records and the add, join the account, declare a log in each group.
    func recordLink(records: [[UInt8]], add: [UInt8], groups: [GroupID], name: String?) async throws -> Set<GroupID>
    /// The records of the account whose recovery key is `key`, for LINKING; throws when none is held here.
    func recoveryRecords(key: AuthorID) async throws -> [[UInt8]]
    /// A recovery of the LINKING's account by this new device: the recovery key adds it, the device joins and
    /// declares a log in each of the account's groups. Returns RECOVERY's records and the groups.
    func recordRecovery(
        records: [[UInt8]],
        recovery: NodeIdentity,
        name: String?
    ) async throws -> (records: [[UInt8]], groups: Set<GroupID>)
    /// A RECOVERY's records, which must make `device` a device of the account whose recovery key is `key`.
    func takeRecovery(_ records: [[UInt8]], key: AuthorID, device: AuthorID) async throws
}

extension EngineStorage {
    /// A storage that links no device (an in-memory one for the sync layer's tests) refuses every link.
    public func checkLink(ticket: [UInt8], proves: @escaping @Sendable (Data) -> Bool) async throws -> [[UInt8]] {
        throw LinkUnsupported()
    }

    public func signDeviceAdd(
        ticket: [UInt8],
        device: AuthorID,
        consent: [UInt8],
        proves: @escaping @Sendable (Data) -> Bool
    ) async throws -> (record: [UInt8], groups: [GroupID]) {
        throw LinkUnsupported()
    }

    public func canBeLinked() async throws -> Bool { false }

    /// A storage that keeps no follow states (an in-memory one for the sync layer's tests) shares none, takes none.
    public func followStates() async throws -> [FollowEntry] { [] }

    public func mergeFollows(_ entries: [FollowEntry]) async throws -> Int { 0 }

    public func recoveryRecords(key: AuthorID) async throws -> [[UInt8]] { throw LinkUnsupported() }

    public func recordRecovery(
        records: [[UInt8]],
        recovery: NodeIdentity,
        name: String?
    ) async throws -> (records: [[UInt8]], groups: Set<GroupID>) {
        throw LinkUnsupported()
    }

    public func takeRecovery(_ records: [[UInt8]], key: AuthorID, device: AuthorID) async throws {
        throw LinkUnsupported()
    }

    public func recordLink(
        records: [[UInt8]],
        add: [UInt8],
        groups: [GroupID],
        name: String?
    ) async throws
        -> Set<GroupID>
    {
        throw LinkUnsupported()
    }
}

/// What a storage that links no device throws.
public struct LinkUnsupported: Error, CustomStringConvertible {
    public var description: String { "this node does not link devices" }
}

/// What storing a batch did.
public struct Ingested: Sendable, Hashable {
    /// Records newly stored.
    public var stored: [RecordID]
    /// Records refused as forks (kept as evidence).
    public var forks: [ForkSummary]
    /// Records stored but ignored by every view, with the rule each breaks.
    public var brokeRules: [RecordID: String]
    /// This node's clock after the batch.
    public var clock: VectorClock

    public init(stored: [RecordID], forks: [ForkSummary], brokeRules: [RecordID: String], clock: VectorClock) {
        self.stored = stored
        self.forks = forks
        self.brokeRules = brokeRules
        self.clock = clock
    }
}
