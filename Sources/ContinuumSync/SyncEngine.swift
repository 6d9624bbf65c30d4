import AsyncAlgorithms
import ContinuumCore
import ContinuumStore
import ContinuumWire
import Foundation
import Logging
import NIOCore

/// The sync side of a node: its authenticated sessions, live gossip between them, anti-entropy rounds, and the
/// photo fetcher. Connections come from ``SyncNetwork``; this type never touches sockets directly.
public actor SyncEngine {
    let store: ContinuumStore
    let identity: NodeIdentity
    let configuration: SyncConfiguration
    let logger: Logger
    let photos: PhotoFetcher

    private var sessions: [AuthorID: PeerSession] = [:]
    /// The port actually bound, once known (the configuration may say 0: any free port).
    private var listenPort: UInt16?

    /// Sets the port sent in HELLO, so that peers can dial this node back.
    public func setListenPort(_ port: UInt16) { listenPort = port }
    private var gossipedThrough: Int64 = 0
    private var subscribers: [UUID: AsyncStream<SyncEvent>.Continuation] = [:]
    private let wakes: AsyncStream<Void>
    private let wake: AsyncStream<Void>.Continuation

    public init(store: ContinuumStore, identity: NodeIdentity, configuration: SyncConfiguration, logger: Logger) {
        self.store = store
        self.identity = identity
        self.configuration = configuration
        self.logger = logger
        photos = PhotoFetcher(store: store, configuration: configuration, logger: logger)
        (wakes, wake) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
    }

    /// Our HELLO.
    var hello: Hello {
        Hello(
            protocolVersion: WireLimits.protocolVersion,
            network: configuration.network,
            node: identity.author,
            name: configuration.name,
            listenPort: listenPort ?? configuration.listenPort,
            plaintext: configuration.plaintext
        )
    }

    // MARK: Events

    /// A stream of everything that happens from now on.
    public func events() -> AsyncStream<SyncEvent> {
        let (stream, continuation) = AsyncStream<SyncEvent>.makeStream(bufferingPolicy: .bufferingNewest(10_000))
        let id = UUID()
        subscribers[id] = continuation
        continuation.onTermination = { [weak self] _ in
            Task { await self?.unsubscribe(id) }
        }
        return stream
    }

    private func unsubscribe(_ id: UUID) { subscribers[id] = nil }

    func emit(_ event: SyncEvent) {
        for continuation in subscribers.values { continuation.yield(event) }
    }

    // MARK: Sessions

    /// Checks a peer's HELLO against ours and the TLS identity.
    func check(_ theirs: Hello, tlsPeer: AuthorID?) throws(WireError) {
        guard theirs.protocolVersion == WireLimits.protocolVersion else {
            throw WireError(
                .unsupportedVersion,
                "protocol version \(theirs.protocolVersion) is not supported; this node speaks "
                    + "version \(WireLimits.protocolVersion)"
            )
        }
        guard theirs.network == configuration.network else {
            throw WireError(
                .wrongNetwork,
                "the peer belongs to another network (\(theirs.network.hex.prefix(12))); "
                    + "nodes sync only when they share --network or --network-key"
            )
        }
        guard theirs.node != identity.author else {
            throw WireError(.selfConnection, "the peer claims this node's own identity")
        }
        guard theirs.plaintext == configuration.plaintext else {
            throw WireError(
                .plaintextRefused,
                "--insecure-plaintext must be set on both peers or neither"
            )
        }
        if let tlsPeer, tlsPeer != theirs.node {
            throw WireError(
                .identityMismatch,
                "HELLO names \(theirs.node.short) but the TLS certificate is \(tlsPeer.short)"
            )
        }
    }

    /// Adds a session, keeping one per peer: when both nodes dialled each other, the connection dialled by the
    /// node with the smaller id wins, on both sides.
    func register(_ session: PeerSession) async -> Bool {
        if let existing = sessions[session.peer] {
            let newWins = keeps(initiator: session.initiator, peer: session.peer)
            let oldWins = keeps(initiator: existing.initiator, peer: existing.peer)
            if oldWins || !newWins { return false }
            await existing.close()
        }
        sessions[session.peer] = session
        try? await store.rememberPeer(
            session.peer,
            name: session.hello.name,
            host: session.host,
            port: Int(session.hello.listenPort),
            state: "connected"
        )
        emit(.peerJoined(session.peer, name: session.hello.name))
        await photos.poke(peerJoined: true)
        logger.info(
            "peer connected",
            metadata: ["peer.id": "\(session.peer.short)", "peer.name": "\(session.hello.name ?? "")"]
        )
        return true
    }

    /// Whether a connection to `peer` that we did (or did not) initiate is the one to keep.
    private func keeps(initiator: Bool, peer: AuthorID) -> Bool {
        let dialer = initiator ? identity.author : peer
        let other = initiator ? peer : identity.author
        return dialer < other
    }

    func unregister(_ session: PeerSession, reason: String) async {
        let stats = await session.takeStats()
        await session.close()
        guard sessions[session.peer] === session else { return }
        sessions[session.peer] = nil
        // Recorded even while the node shuts down: a new task does not inherit this one's cancellation.
        let store = self.store
        await Task {
            try? await store.updatePeer(
                session.peer,
                state: "disconnected",
                recordsIn: stats.recordsIn,
                recordsOut: stats.recordsOut,
                bytesIn: stats.bytesIn,
                bytesOut: stats.bytesOut
            )
        }.value
        await photos.peerLeft(session.peer)
        emit(.peerLeft(session.peer, reason: reason))
        logger.info("peer disconnected", metadata: ["peer.id": "\(session.peer.short)", "reason": "\(reason)"])
    }

    func session(for peer: AuthorID) -> PeerSession? { sessions[peer] }

    /// Fetches a photo now, whatever its size (photos over `--max-photo-mb` are otherwise skipped).
    public func fetchPhoto(_ hash: AssetHash) async {
        await photos.fetchOnDemand(hash)
    }

    /// Peers with a session now.
    public func connectedPeers() -> [AuthorID] { sessions.keys.sorted() }

    /// Records from a session were stored: gossip them on and look for photos.
    func didStore(from session: PeerSession, count: Int) async {
        emit(.recordsStored(from: session.peer, count: count))
        wakeGossip()
        await photos.poke()
    }

    // MARK: Gossip

    /// Forwards records stored since the last look (by any path: a peer, this process, or another process such
    /// as the CLI) to every session whose peer does not hold them.
    private func gossipNewRecords() async {
        while true {
            guard let records = try? await store.records(after: gossipedThrough, limit: 1000), !records.isEmpty
            else { return }
            gossipedThrough = records.last!.rowid
            for session in sessions.values { await session.gossip(records) }
            if records.count < 1000 { return }
        }
    }

    func wakeGossip() { wake.yield() }

    /// Runs the background loops (gossip, photo fetching, periodic anti-entropy) until cancelled.
    public func run() async {
        await photos.attach(self)
        gossipedThrough = (try? await store.lastRecordRowid()) ?? 0
        await withTaskGroup(of: Void.self) { group in
            // Records written by other processes (the CLI) are noticed within one poll interval.
            group.addTask { [configuration, wake] in
                while !Task.isCancelled {
                    try? await Task.sleep(for: configuration.pollInterval)
                    wake.yield()
                }
            }
            group.addTask {
                for await _ in self.wakes { await self.gossipNewRecords() }
            }
            group.addTask { await self.photos.run() }
            if let interval = configuration.antiEntropyInterval {
                group.addTask {
                    while !Task.isCancelled {
                        try? await Task.sleep(for: interval)
                        if Task.isCancelled { break }
                        _ = await self.syncNow(timeout: interval)
                    }
                }
            }
            await group.waitForAll()
        }
        for continuation in subscribers.values { continuation.finish() }
    }

    /// An anti-entropy round with every connected peer now; returns when each has sent what we lacked (or on
    /// timeout). The result is the number of peers that completed.
    public func syncNow(timeout: Duration = .seconds(60)) async -> Int {
        let current = Array(sessions.values)
        return await withTaskGroup(of: Bool.self) { group in
            for session in current {
                group.addTask {
                    let number = await session.startRound()
                    return await session.waitForRound(number, timeout: timeout)
                }
            }
            var completed = 0
            for await done in group where done { completed += 1 }
            return completed
        }
    }
}
