import ContinuumCore
import ContinuumDiscovery
import ContinuumSession
import ContinuumStore
import Foundation

// What the commands and the running node say to each other on the control socket (``ControlServer``,
// ``ControlClient``): one request, then reply lines; each line one JSON value of these types. Both ends are this
// same program, so the format is internal and may change between versions.

/// A request to the running node.
public enum ControlRequest: Codable, Sendable, Hashable {
    /// An anti-entropy round with every connected peer: `.syncProgress` replies, then `.synced`.
    case sync
    /// A photo, whatever its size: `.photoProgress` replies, then `.photoStored` (or `.failed` after 120 s).
    case fetch(photo: AssetHash)
    /// The peers connected now and what they asked to have pushed: `.connected`.
    case connected
    /// Another process just stored records: send them to peers now rather than at the next look. `.ok`.
    case stored
    /// Another process changed the followed posts: re-read them and tell the peers. `.ok`.
    case followsChanged
    /// Another process erased text, but a reader kept it from truncating the WAL before it exits: truncate it as
    /// soon as no reader holds it (PROTOCOL.md §2.6). `.ok`.
    case truncateWAL
    /// The node's events: `.watching`, then one ``WatchEvent`` line each (the `watch --json` format) until either
    /// side closes.
    case watch
    /// LAN discovery's state: `.discovery`.
    case discovery
    /// The port the node's sync listener is bound to: `.listening`.
    case listening
    /// Joins a group with an invite code: `.joined` once the inviter accepted it (or `.failed`).
    case join(code: String)
    /// Asks the node at `host`:`port` to let this node join: `.pending` once it waits for an admin there, then
    /// `.joined` (or `.failed`: denied, or no answer within `waitSeconds`).
    case ask(host: String, port: Int, node: AuthorID?, waitSeconds: Int)
    /// Joins the open group announced on the LAN under this name (or id prefix): `.joined` (or `.failed`).
    case joinOpen(name: String)
}

/// Records and bytes a session open now has moved each way; the store's counters add them when it ends.
public struct LiveTraffic: Codable, Sendable, Hashable {
    public var recordsIn: Int64
    public var recordsOut: Int64
    public var bytesIn: Int64
    public var bytesOut: Int64
    /// Tree push on this session so far: links pruned and grafted by this side, records announced (HAVE).
    public var prunes: Int?
    public var grafts: Int?
    public var announced: Int?

    public init(_ stats: SessionStats) {
        recordsIn = stats.recordsIn
        recordsOut = stats.recordsOut
        bytesIn = stats.bytesIn
        bytesOut = stats.bytesOut
        prunes = stats.prunes
        grafts = stats.grafts
        announced = stats.announced
    }
}

extension PeerRecord {
    /// The peer's counters with what its open session moved so far.
    public func adding(_ live: LiveTraffic?) -> PeerRecord {
        guard let live else { return self }
        return adding(
            recordsIn: live.recordsIn,
            recordsOut: live.recordsOut,
            bytesIn: live.bytesIn,
            bytesOut: live.bytesOut
        )
    }
}

/// A reply line from the running node.
public enum ControlReply: Codable, Sendable, Hashable {
    /// The request cannot be done; the message is for a person.
    case failed(String)
    case ok
    /// Records and bytes received from a peer in this round, of what it announced.
    case syncProgress(peer: AuthorID, records: UInt64, ofRecords: UInt64, bytes: UInt64, ofBytes: UInt64)
    /// The round is over: `completed` of the `peers` connected at its start sent everything within 120 s.
    case synced(peers: Int, completed: Int)
    case photoProgress(bytes: UInt64, ofBytes: UInt64)
    /// The photo is in the store, at `path`.
    case photoStored(path: String)
    /// The peers with a session now, for each the number of posts it asked to have pushed, and what its session
    /// has moved so far (not yet in the store's counters).
    case connected(peers: [AuthorID], interest: [AuthorID: Int], traffic: [AuthorID: LiveTraffic])
    /// The start of the event stream: this node, and the time.
    case watching(node: AuthorID, at: Timestamp)
    case discovery(DiscoveryStatus)
    /// The sync port the node listens on.
    case listening(port: Int)
    /// The invite was accepted: this node is now a member of the group.
    case joined(group: GroupID)
    /// A request to join waits for an admin of the node asked; the message says how it approves it.
    case pending(String)

    /// The message of a `.failed` reply, to throw; nil for every other reply.
    public var failure: ControlError? {
        if case .failed(let message) = self { ControlError(message) } else { nil }
    }
}
