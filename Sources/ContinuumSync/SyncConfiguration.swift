import ContinuumCore
import ContinuumSession
import ContinuumWire
import Logging

/// How a node syncs.
public struct SyncConfiguration: Sendable {
    /// The display name sent in HELLO.
    public var name: String?
    /// The port this node listens on, sent in HELLO so that peers can dial back (0: not listening).
    public var listenPort: UInt16 = 0
    /// Debugging only: no TLS. Refused unless both peers set it.
    public var plaintext = false
    /// Photos up to this size are fetched as soon as their post arrives; larger ones are skipped.
    public var maxPhotoBytes: UInt64 = 50 * 1024 * 1024
    /// Photos fetched at once (while some are being synced to disk, the next ones' bytes are already arriving).
    /// Durable writes are the bound: on the benchmark machine, 2 MiB files written with an fsync each reach about
    /// 110 MB/s one at a time, 290 MB/s three at a time and 550 MB/s eight at a time.
    public var parallelPhotoTransfers = 8
    /// Records per RECORDS frame during anti-entropy.
    public var batchRecords = 1000
    /// RECORDS frames sent but not yet acknowledged, at most. Must exceed `flushRecords / batchRecords`.
    public var window = 6
    /// A receiver stores up to this many records in one transaction (several frames' worth).
    public var flushRecords = 3000
    /// A new anti-entropy round with every peer this often (nil: only on connect and on `sync`).
    public var antiEntropyInterval: Duration? = .seconds(60)
    /// A peer must complete the handshake within this time.
    public var handshakeTimeout: Duration = .seconds(10)
    /// A session with no frame received for this long is closed (pings are sent at a third of it).
    public var idleTimeout: Duration = .seconds(45)
    /// How often the store is checked for records written by other processes (the CLI).
    public var pollInterval: Duration = .milliseconds(50)
    /// Cores used to verify signatures.
    public var verifyConcurrency = 2
    /// Whether a new post from another node makes a notification (it always makes a ``SyncEvent/postAdded``).
    public var notifyNewPosts = false
    /// The work each peer may make this node do (``PeerBudget``).
    public var peerBudget = PeerBudget.Limits()
    /// Rounds and REQUESTs from one peer waiting to be answered, at most; one more is refused with ERROR over budget.
    public var maxQueuedStreams = 16
    /// PHOTO_WANTs and THUMB_WANTs from one peer waiting to be served, at most; one more is refused the same way.
    public var maxQueuedServes = 256
    /// Interest changes are relayed to the other peers at most this often (coalesced in between).
    public var interestRelayInterval: Duration = .milliseconds(250)
    /// Sessions kept at once, at most (`--max-peers`): the active view of the overlay (``PeerView``). 0: no limit,
    /// and no tree push either: every known peer is dialled and every record sent to every peer (a full mesh).
    public var maxPeers = 8
    /// How long a record announced by HAVE may take to arrive by the tree before it is pulled and the link grafted.
    public var treeRepairDelay: Duration = .milliseconds(200)
    /// Fault injection for tests: a pause before each photo chunk sent (and each PHOTOS), to make transfers slow
    /// enough to cut.
    public var photoChunkDelay: Duration?
    /// Small photos a PHOTOS_WANT asks for at most (1 … 64); fewer only in tests, so that many batches are cut.
    public var photosPerWant = WireLimits.maxPhotosPerBatch

    public init() {}

    /// The rules' part of this configuration, for each session's ``SessionMachine``.
    var session: SessionMachine<VerifiedRecord>.Configuration {
        var session = SessionMachine<VerifiedRecord>.Configuration()
        session.window = window
        session.flushRecords = flushRecords
        session.maxQueuedStreams = maxQueuedStreams
        session.maxQueuedServes = maxQueuedServes
        session.budget = peerBudget
        session.treePush = maxPeers > 0
        session.treeRepairDelay = treeRepairDelay
        return session
    }
}

/// Something that happened, for `watch`, progress displays and tests.
public enum SyncEvent: Sendable, Hashable {
    case peerJoined(AuthorID, name: String?)
    case peerLeft(AuthorID, reason: String)
    /// Records from a peer were stored.
    case recordsStored(from: AuthorID, count: Int)
    /// Progress of an incoming anti-entropy round: records and bytes received of what the peer announced.
    case progress(from: AuthorID, records: UInt64, ofRecords: UInt64, bytes: UInt64, ofBytes: UInt64)
    /// A peer finished sending us what we lacked.
    case roundFinished(with: AuthorID, round: UInt32)
    case forkDetected(ForkSummary)
    case photoArrived(AssetHash)
    case photoSkipped(AssetHash, bytes: UInt64)
    case photoProgress(AssetHash, bytes: UInt64, of: UInt64)
    /// A thumbnail of the photo is now here, or a better one replaced it: one received from a peer (before or
    /// instead of the photo), or this node's own, made when the photo arrived.
    case thumbnailArrived(AssetHash)
    /// A post was stored (made here, or received).
    case postAdded(PostID, author: AuthorID, caption: String)
    /// A comment was stored.
    case commentAdded(CommentID, post: PostID, author: AuthorID, text: String)
    /// An edit of a post's caption was stored (it applies when its author is the post's).
    case postEdited(PostID, author: AuthorID, caption: String?)
    /// A deletion was stored (it applies to the targets of the same author).
    case deleted([RecordID], author: AuthorID)
    /// A reaction to a post or comment was stored (`none`: its author took a reaction back).
    case reacted(post: PostID, target: RecordID, author: AuthorID, emoji: ReactionEmoji)
    /// A notification was made.
    case notification(NotificationSummary)
    /// A node asked to join (the first time it asked, or since it was last approved or denied): it waits for an
    /// admin (`requests`, `approve`, `deny`).
    case joinRequested(AuthorID, name: String?)
}

extension Logger {
    /// A store call that failed: logged at `level`, or at debug when it was cancelled (the node is shutting down,
    /// and every pending call ends that way).
    func failure(_ message: Logger.Message, _ error: any Error, level: Logger.Level = .error) {
        log(level: error is CancellationError ? .debug : level, message, metadata: ["error": "\(error)"])
    }
}
