import ContinuumCore
import ContinuumWire

// What goes in and out of the ``HandshakeMachine``: the two sides of a connection, the engine's answers, the
// actions asked of the executor.

/// The two sides of a connection whose HELLOs crossed and passed the checks.
public struct HandshakeMeeting: Hashable, Sendable {
    /// The peer's HELLO.
    public let theirs: Hello
    /// This node's HELLO.
    public let ours: Hello
    /// The peer's address as the connection saw it, for the log and for `peers`.
    public let host: String

    /// Pairs the two HELLOs of a connection to `host`.
    public init(theirs: Hello, ours: Hello, host: String) {
        self.theirs = theirs
        self.ours = ours
        self.host = host
    }

    /// The peer's node id.
    public var peer: NodeID { NodeID(unchecked: theirs.node.bytes) }
    /// This node's id.
    public var me: NodeID { NodeID(unchecked: ours.node.bytes) }
}

/// The payload of a JOINED: the group joined and the member record that adds the joiner.
public struct JoinedGroup: Hashable, Sendable {
    /// The group joined.
    public let group: GroupID
    /// The record, signed by the inviter (or an admin), that adds the joiner's node and log to the group.
    public let record: [UInt8]

    /// A JOINED's payload.
    public init(group: GroupID, record: [UInt8]) {
        self.group = group
        self.record = record
    }
}

/// A join this side of the connection makes (it dialled to join).
public enum HandshakeJoin: Hashable, Sendable {
    /// A join by invite: the node that made it is the one whose id starts with these bytes (the code's node prefix);
    /// `log` is the joiner's new log for the group.
    case invite(nodePrefix: [UInt8], log: AuthorID)
    /// A request to join, which an admin of the peer approves, for the asker's new log `log`.
    case request(log: AuthorID)
    /// A new device's link into the account of the device that made the link code, whose id starts with these bytes.
    case link(nodePrefix: [UInt8])
    /// A new device's recovery of the account whose recovery key it holds, through any node that holds the account.
    case recover

    /// The joiner's new log, which the JOINED must add; nil for a link or a recovery.
    public var log: AuthorID? {
        switch self {
        case .invite(_, let log), .request(let log): log
        case .link, .recover: nil
        }
    }
}

/// What a LINKED says: the `device-add` record that adds the new device, and the account's groups it shares now.
public struct LinkedAccount: Hashable, Sendable {
    public let record: [UInt8]
    public let groups: [GroupID]

    public init(record: [UInt8], groups: [GroupID]) {
        self.record = record
        self.groups = groups
    }
}

/// What a new device recovering an account sends (RECOVERY), and the account's groups it shares then.
public struct RecoveredAccount: Hashable, Sendable {
    public let records: [[UInt8]]
    public let groups: Set<GroupID>

    public init(records: [[UInt8]], groups: Set<GroupID>) {
        self.records = records
        self.groups = groups
    }
}

/// What the engine found when it checked the peer's HELLO and TLS identity.
public enum HelloVerdict: Hashable, Sendable {
    /// The HELLO holds: the membership exchange goes on.
    case passed
    /// A check of ``PROTOCOL.md`` §7.8.3 step 3 failed with this ERROR.
    case refused(WireError)
    /// The peer's TLS certificate holds no Ed25519 key.
    case noEd25519Certificate
    /// Reading the peer's TLS certificate failed (said here, for the log).
    case certificateUnreadable(String)
}

/// The engine's admission of the peer (§7.8.3 steps 5 – 7).
public struct HandshakeAdmission: Hashable, Sendable {
    /// The groups the session shares.
    public var groups: Set<GroupID>
    /// A join by invite or request that this node accepted: JOINED is sent with it.
    public var joined: JoinedGroup?
    /// The first of the peer's claims that did not hold, for the refusal's message.
    public var problem: String?
    /// Whether this node is in no group at all (only asked when `groups` is empty; it chooses the refusal's message).
    public var nodeInNoGroup: Bool
    /// A link or a recovery this node accepted: the account records LINKING sends.
    public var linking: [[UInt8]]?
    /// Whether `linking` answers a recovery (the peer's RECOVERY follows) rather than a link (its CONSENT).
    public var recovering: Bool

    /// An admission; by default one that shares nothing and accepts no join.
    public init(
        groups: Set<GroupID> = [],
        joined: JoinedGroup? = nil,
        problem: String? = nil,
        nodeInNoGroup: Bool = false,
        linking: [[UInt8]]? = nil,
        recovering: Bool = false
    ) {
        self.groups = groups
        self.joined = joined
        self.problem = problem
        self.nodeInNoGroup = nodeInNoGroup
        self.linking = linking
        self.recovering = recovering
    }
}

/// What the handshake settled: the session goes on with these.
public struct HandshakeOutcome: Hashable, Sendable {
    /// The two sides.
    public let meeting: HandshakeMeeting
    /// The groups the session shares; never empty.
    public let groups: Set<GroupID>
    /// A join by invite or request was completed on this connection (either side), so the session is kept whatever
    /// the overlay's bound.
    public let joined: Bool

    /// The terms of a session with the peer of `meeting`.
    public init(meeting: HandshakeMeeting, groups: Set<GroupID>, joined: Bool) {
        self.meeting = meeting
        self.groups = groups
        self.joined = joined
    }
}

/// How a join this side made went, for the person who asked for it.
public enum JoinReport: Hashable, Sendable {
    /// The group was joined.
    case joined(GroupID)
    /// The join failed, for this reason.
    case failed(String)
    /// A request to join waits for an admin (the peer's message): asking again later may succeed.
    case pending(String)
    /// This device was linked into the account of the peer's device, or recovered its account.
    case linked
}

/// What the ``HandshakeMachine`` asks its executor to do, in order. Actions that ask the engine name the input that
/// takes the answer; the executor reads no frame until it has given it.
public enum HandshakeAction: Hashable, Sendable {
    /// Write this message to the peer.
    case send(WireMessage)
    /// Check the peer's HELLO (and its TLS identity), then answer with ``HandshakeMachine/helloChecked(_:)``.
    case checkHello(Hello)
    /// Make this node's MEMBERSHIP for the peer (claims, tags, and the join or request this side makes), then answer
    /// with ``HandshakeMachine/membershipPrepared(_:)``.
    case prepareMembership(HandshakeMeeting)
    /// Admit the peer on its MEMBERSHIP, then answer with ``HandshakeMachine/admitted(_:)``.
    case admit(HandshakeMeeting, Membership)
    /// Say whether this node is a member of the group of the JOINED received already, then answer with
    /// ``HandshakeMachine/joinedChecked(alreadyMember:)``.
    case checkJoined(JoinedGroup)
    /// Record the group joined (the JOINED holds), then answer with ``HandshakeMachine/joinRecorded()``.
    case recordJoin(JoinedGroup)
    /// A session with `peer` that exists already takes this group (it was joined on this connection).
    case shareWithExistingSession(peer: AuthorID, group: GroupID)
    /// Tell whoever asked for this side's join how it went.
    case reportJoin(JoinReport)
    /// A new device: check the account records of the LINKING and sign this device's consent to the account, then
    /// answer with ``HandshakeMachine/consentSigned(_:)``.
    case consentTo([[UInt8]])
    /// The device that made the link code: sign the `device-add` of the peer with its consent, then answer with
    /// ``HandshakeMachine/linkSigned(_:)``.
    case signLink(consent: [UInt8])
    /// A new device: record the link (the add, the joining record, the groups), then answer with
    /// ``HandshakeMachine/linkRecorded(_:)``.
    case recordLink(LinkedAccount)
    /// A new device recovering an account: check the LINKING's account against the recovery key, sign this device's
    /// add (and the removals asked) with it, record them, then answer with ``HandshakeMachine/recoverySigned(_:)``.
    case recoverAccount([[UInt8]])
    /// A node that sent a recovering device the account's records: take the RECOVERY's records, which must make the
    /// peer a device of the account, then answer with ``HandshakeMachine/recoveryTaken(_:)``.
    case takeRecovery([[UInt8]])
    /// The peer refused this node with this ERROR: log it where a person sees it, and remember it for `peers`.
    case rememberRefusal(HandshakeMeeting, WireError)
    /// This node refused the peer as a stranger (no group shared): log it, and remember it for `peers`.
    case rememberStranger(HandshakeMeeting)
    /// Write this ERROR to the peer, then close; `reason` is logged.
    case refuse(WireError, reason: String)
    /// Close without writing anything; `reason` is logged.
    case close(reason: String)
    /// The handshake is done: the connection becomes a session with these terms.
    case established(HandshakeOutcome)
}
