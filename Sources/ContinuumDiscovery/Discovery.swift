import ContinuumCore

/// Finds peers on the local network and announces this node there. The node depends on this protocol, not on
/// Avahi; ``AvahiDiscovery`` is the implementation.
public protocol PeerDiscovery: Sendable {
    /// What was found and lost, from the start of ``run(advertising:)`` on. One consumer.
    var events: AsyncStream<DiscoveryEvent> { get }

    /// Announces `advertisement` and browses for peers until the task is cancelled. Never throws: when the
    /// mechanism is unavailable it says why in ``status()`` and keeps retrying in the background.
    func run(advertising advertisement: ServiceAdvertisement) async

    /// A snapshot for `status`.
    func status() -> DiscoveryStatus

    /// Announces these open groups from now on (in the TXT record, §6): anyone who finds them may join.
    func announce(openGroups: [AnnouncedGroup])
}

/// An open group a node announces in discovery (PROTOCOL.md §6): its id and name. Only groups founded with
/// `--open` are announced; a private group's name and members never are.
public struct AnnouncedGroup: Sendable, Hashable, Codable {
    public let id: GroupID
    public let name: String

    public init(id: GroupID, name: String) {
        self.id = id
        self.name = name
    }

    /// At most this many are announced.
    public static let maxAnnounced = 4
    /// A name is cut to this many bytes in the TXT entry (on a character boundary).
    public static let maxNameBytes = 150

    /// The TXT entry's value: the id in hex, a colon, the name.
    var txtValue: String {
        var name = self.name
        while name.utf8.count > Self.maxNameBytes { name.removeLast() }
        return "\(id.hex):\(name)"
    }

    /// Parses a TXT entry's value; nil when it is not 64 hex digits, a colon and a name of 1 or more bytes.
    init?(txtValue value: Substring) {
        guard let colon = value.firstIndex(of: ":"), let id = GroupID(hex: value[..<colon]) else { return nil }
        let name = value[value.index(after: colon)...]
        // One line of printable text, as a group's name in its record must be (§2.3): no control or format
        // characters, which a terminal or a log would interpret.
        guard !name.isEmpty,
            !name.unicodeScalars.contains(where: {
                [.control, .format, .lineSeparator, .paragraphSeparator].contains($0.properties.generalCategory)
            })
        else { return nil }
        self.init(id: id, name: String(name))
    }
}

/// What a node announces: the DNS-SD service `_continuum._tcp` with these TXT entries (Docs/PROTOCOL.md).
public struct ServiceAdvertisement: Sendable, Hashable {
    /// The DNS-SD service type.
    public static let serviceType = "_continuum._tcp"

    /// The instance name (the display name); on a collision the publisher picks an alternative.
    public var name: String
    /// The sync port.
    public var port: UInt16
    /// This node's id: peers with the same id (this node) are ignored.
    public var node: AuthorID
    /// The sync protocol version.
    public var protocolVersion: UInt16
    /// 32 hex digits derived from the network id (never the id or the key itself); peers with another one are
    /// ignored.
    public var networkHash: String
    /// The open groups announced (at most ``AnnouncedGroup/maxAnnounced``), as `open0=` … `open3=`.
    public var openGroups: [AnnouncedGroup]

    public init(
        name: String,
        port: UInt16,
        node: AuthorID,
        protocolVersion: UInt16,
        networkHash: String,
        openGroups: [AnnouncedGroup] = []
    ) {
        self.name = name
        self.port = port
        self.node = node
        self.protocolVersion = protocolVersion
        self.networkHash = networkHash
        self.openGroups = openGroups
    }

    /// The TXT entries, `key=value`, in this order.
    public var txt: [String] {
        ["txtvers=1", "node=\(node.hex)", "proto=\(protocolVersion)", "net=\(networkHash)"]
            + openGroups.prefix(AnnouncedGroup.maxAnnounced).enumerated().map { "open\($0)=\($1.txtValue)" }
    }

    /// The instance name: the display name cut to the 63 bytes a DNS label may hold (on a character boundary).
    public var instanceName: String {
        var name = self.name.isEmpty ? "continuum \(node.short)" : self.name
        while name.utf8.count > 63 { name.removeLast() }
        return name
    }
}

/// The TXT entries of a peer's service, parsed.
public struct ServiceTXT: Sendable, Hashable {
    public let node: AuthorID
    public let protocolVersion: UInt16
    public let networkHash: String
    /// The open groups the peer announces (`open0=` … `open3=`; malformed ones are ignored).
    public var openGroups: [AnnouncedGroup] = []

    /// Parses `key=value` entries in any order; unknown keys are ignored, and the first of repeated keys wins.
    /// Fails, with the reason, when a required key is missing or malformed.
    public static func parse(_ entries: [String]) -> Result<ServiceTXT, ParseError> {
        var values: [String: String] = [:]
        for entry in entries {
            guard let equals = entry.firstIndex(of: "=") else { continue }
            let key = entry[..<equals].lowercased()
            if values[key] == nil { values[key] = String(entry[entry.index(after: equals)...]) }
        }
        guard let hex = values["node"], let node = AuthorID(hex: hex) else {
            return .failure(ParseError(reason: "no valid node= entry (64 hex digits)"))
        }
        guard let text = values["proto"], let version = UInt16(text) else {
            return .failure(ParseError(reason: "no valid proto= entry (a decimal number)"))
        }
        guard let net = values["net"], net.utf8.count == 32, net.utf8.allSatisfy(Self.isLowerHex) else {
            return .failure(ParseError(reason: "no valid net= entry (32 lowercase hex digits)"))
        }
        var parsed = ServiceTXT(node: node, protocolVersion: version, networkHash: net)
        parsed.openGroups = (0..<AnnouncedGroup.maxAnnounced).compactMap { index in
            values["open\(index)"].flatMap { AnnouncedGroup(txtValue: Substring($0)) }
        }
        return .success(parsed)
    }

    private static func isLowerHex(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte)
    }

    public struct ParseError: Error, Sendable, Hashable {
        public let reason: String
    }
}

/// A resolved peer of this node's network.
public struct DiscoveredPeer: Sendable, Hashable {
    /// The peer's node id, from its TXT record (the TLS handshake then proves it).
    public let node: AuthorID
    /// The service instance name (its display name, or an alternative after a collision).
    public let name: String
    /// An address to dial: IPv4 when the peer has one; otherwise IPv6, with `%interface` when link-local.
    public let host: String
    public let port: UInt16
    public let protocolVersion: UInt16
    /// The open groups it announces.
    public let openGroups: [AnnouncedGroup]

    public init(
        node: AuthorID,
        name: String,
        host: String,
        port: UInt16,
        protocolVersion: UInt16,
        openGroups: [AnnouncedGroup] = []
    ) {
        self.node = node
        self.name = name
        self.host = host
        self.port = port
        self.protocolVersion = protocolVersion
        self.openGroups = openGroups
    }
}

/// Something discovery saw.
public enum DiscoveryEvent: Sendable, Hashable {
    /// A peer of this network was resolved, or its address or TXT changed.
    case found(DiscoveredPeer)
    /// Every service of that peer is gone (it stopped, or left the network). A working connection may remain.
    case removed(AuthorID)
}

/// Discovery's state, for `status`. Codable: the running node sends it to `status` over its control socket.
public struct DiscoveryStatus: Sendable, Hashable, Codable {
    public enum State: String, Sendable, Hashable, Codable {
        /// No node is running on the data directory (what `status` shows then).
        case stopped
        /// Turned off (`--no-discovery`).
        case off
        /// Connecting to avahi-daemon.
        case starting
        /// Published and browsing.
        case on
        /// No daemon (or it failed); retrying in the background. `lastError` says why.
        case unavailable
    }

    public var state: State
    /// Why discovery is (or last was) unavailable, e.g. "avahi-daemon not running (Daemon not running)".
    public var lastError: String?
    /// Distinct peers of this network resolved since the node started.
    public var peersSeen: Int
    /// Peers of this network advertised right now.
    public var peersPresent: Int
    /// Services of other networks seen (ignored).
    public var otherNetworksSeen: Int
    /// The instance name published, once registered (differs from the display name after a collision).
    public var serviceName: String?
    /// Open groups announced by the peers present now, with where to reach one of their announcers.
    public var openGroups: [NearbyOpenGroup] = []

    public init(
        state: State,
        lastError: String? = nil,
        peersSeen: Int = 0,
        peersPresent: Int = 0,
        otherNetworksSeen: Int = 0,
        serviceName: String? = nil
    ) {
        self.state = state
        self.lastError = lastError
        self.peersSeen = peersSeen
        self.peersPresent = peersPresent
        self.otherNetworksSeen = otherNetworksSeen
        self.serviceName = serviceName
    }
}

/// An open group that a node on the LAN announces: `join NAME` and `run --join-open` join it.
public struct NearbyOpenGroup: Sendable, Hashable, Codable {
    public let group: AnnouncedGroup
    /// A node that announces it, and where it listens.
    public let node: AuthorID
    public let host: String
    public let port: UInt16

    public init(group: AnnouncedGroup, node: AuthorID, host: String, port: UInt16) {
        self.group = group
        self.node = node
        self.host = host
        self.port = port
    }
}

/// One resolved service: a peer may show up several times (per interface and address family).
struct ResolvedService: Sendable, Hashable {
    let txt: ServiceTXT
    let name: String
    let host: String
    let port: UInt16
    let isIPv4: Bool
}

/// Which of a peer's resolved services to dial: IPv4 first, then the rest, by a stable order.
func preferred(_ services: some Collection<ResolvedService>) -> ResolvedService? {
    services.min { a, b in
        if a.isIPv4 != b.isIPv4 { return a.isIPv4 }
        return (a.host, a.port, a.name) < (b.host, b.port, b.name)
    }
}
