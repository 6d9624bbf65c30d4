import ContinuumCore
import ContinuumDiscovery
import ContinuumSession
import ContinuumSync
import ContinuumWire
import Foundation
import Logging

/// Keeps the sessions of the overlay's active view (``PeerView``): dials this node's neighbours among the peers it
/// knows by id (LAN discovery, the peers remembered from earlier sessions, `--peer ID@HOST:PORT`), ends sessions
/// beyond `--max-peers` that are not neighbours, and tells the engine the neighbours, which it admits when they dial
/// in.
///
/// One dialler per neighbour: it connects and runs the session to its end, then the view is looked at again. A
/// neighbour that cannot be reached is tried again with back-off; after ``DialPlan/suspectAfter`` failures in a row it
/// is suspected gone and leaves the ring, so the ring closes over it, and it is tried again every
/// ``DialPlan/probeInterval`` (a healed partition, a restarted node). A neighbour that answers busy is tried again
/// later. With `--max-peers 0` every known peer is a neighbour: a full mesh, as before the overlay.
///
/// The decisions are a ``DialPlan``'s; this actor performs them (the network, the engine, the log, the waits).
actor OverlayDialer {
    private let network: SyncNetwork
    private let logger: Logger
    /// What to dial and when: every decision, with this actor's clock and random jitter as its inputs.
    private var plan: DialPlan
    private var addresses: [AuthorID: PeerAddress] = [:]
    /// Discovered peers whose TXT announces an earlier protocol version: not dialled, logged once.
    private var otherVersions: Set<AuthorID> = []
    /// Told of every peer discovery finds (its open groups, for `--join-open`).
    private let onFound: @Sendable (DiscoveredPeer) async -> Void
    private let wakes: AsyncStream<Void>
    private let wake: AsyncStream<Void>.Continuation

    init(
        network: SyncNetwork,
        own: AuthorID,
        maxPeers: Int,
        logger: Logger,
        onFound: @escaping @Sendable (DiscoveredPeer) async -> Void = { _ in }
    ) {
        self.network = network
        self.logger = logger
        self.onFound = onFound
        plan = DialPlan(own: own, maxPeers: maxPeers)
        (wakes, wake) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
    }

    /// Peers known by id from memory or configuration, dialled as the view says.
    func add(pinned peers: [(node: AuthorID, address: PeerAddress)]) {
        for (node, address) in peers {
            guard plan.pin(node) else { continue }
            addresses[node] = address
        }
        wake.yield()
    }

    /// Runs until cancelled: discovery's events (if any), the engine's session events, and a look at the view every
    /// second (retries, probes).
    func run(discovery: AsyncStream<DiscoveryEvent>?) async {
        let sessions = await network.engine.events()
        await withDiscardingTaskGroup { group in
            if let discovery {
                group.addTask {
                    for await event in discovery { await self.handle(event) }
                }
            }
            group.addTask {
                for await event in sessions {
                    switch event {
                    case .peerJoined(let peer, _): await self.seen(peer)
                    case .peerLeft: await self.poke()
                    default: continue
                    }
                }
            }
            group.addTask { [wake] in
                while !Task.isCancelled {
                    try? await Task.sleep(for: .seconds(1))
                    wake.yield()
                }
            }
            for await _ in wakes {
                for peer in await reconcile() { group.addTask { await self.dial(peer) } }
            }
            group.cancelAll()
        }
    }

    private func poke() { wake.yield() }

    private func handle(_ event: DiscoveryEvent) async {
        switch event {
        case .found(let peer) where peer.protocolVersion < WireLimits.protocolVersion:
            // An earlier version's node: not dialled (DialPlan); when it dials in, it gets the ERROR that says why.
            if plan.found(peer.node, speaking: peer.protocolVersion) { wake.yield() }
            guard otherVersions.insert(peer.node).inserted else { return }
            logger.notice(
                "a peer speaks an earlier protocol version; not dialled (upgrade its continuum-node)",
                metadata: [
                    "peer.id": "\(peer.node.short)", "peer.name": "\(peer.name)",
                    "peer.protocol": "\(peer.protocolVersion)", "protocol": "\(WireLimits.protocolVersion)",
                ]
            )
        case .found(let peer):
            otherVersions.remove(peer.node)
            guard plan.found(peer.node, speaking: peer.protocolVersion) else { return }
            addresses[peer.node] = PeerAddress(host: peer.host, port: Int(peer.port))
            logger.info(
                "discovered a peer",
                metadata: [
                    "peer.id": "\(peer.node.short)", "peer.name": "\(peer.name)",
                    "peer.address": "\(PeerAddress(host: peer.host, port: Int(peer.port)))",
                ]
            )
            wake.yield()
            if !peer.openGroups.isEmpty { await onFound(peer) }
        case .removed(let node):
            logger.info("a discovered peer is gone", metadata: ["peer.id": "\(node.short)"])
            guard plan.removed(node) else { return }
            wake.yield()
        }
    }

    /// A session with `peer` is up (either side dialled): it is alive, so it is on the ring again.
    private func seen(_ peer: AuthorID) {
        if plan.seen(peer) { wake.yield() }
    }

    /// Dials the neighbours not connected, ends sessions the bound has no room for, and tells the engine the
    /// neighbours.
    private func reconcile() async -> [AuthorID] {
        let engine = network.engine
        let everyone = Set(await engine.connectedPeers())
        // Sessions that do not count in the bound (`--peer HOST:PORT`, a join's until the joiner holds the group's
        // history) are neither ended nor dialled; a join's that counts is ended like any other beyond the bound.
        let connected = await engine.overlayPeers()
        let decided = plan.reconcile(everyone: everyone, overlay: connected, now: ContinuousClock.now)
        let maxPeers = plan.view.maxPeers
        await engine.setView(plan.view)
        for peer in decided.end {
            logger.info("ending a session to make room for a neighbour", metadata: ["peer.id": "\(peer.short)"])
            await engine.dismiss(
                peer,
                WireError(
                    .busy,
                    "this node keeps \(maxPeers) sessions (--max-peers) and needs this one for a neighbour in the overlay"
                )
            )
        }
        return decided.dial
    }

    /// Dials `peer` and runs the session to its end, then settles when to dial it again.
    private func dial(_ peer: AuthorID) async {
        guard let address = addresses[peer] else {
            plan.stopDialling(peer)
            return
        }
        if await waitedForTheirDial(peer) { return }
        let started = ContinuousClock.now
        let (reason, reached) = await network.connect(to: address, expected: peer)
        plan.stopDialling(peer)
        if await network.engine.isConnected(peer) {
            // The peer's own connection won the tie (or replaced this one): nothing failed.
            plan.connectedByThem(peer)
            wake.yield()
            return
        }
        logger.info(
            "session with a peer of the overlay ended",
            metadata: ["peer.id": "\(peer.short)", "peer.address": "\(address)", "reason": "\(reason)"]
        )
        let suspected = plan.ended(peer, reason: reason, reached: reached, started: started, now: ContinuousClock.now)
        if let failures = suspected {
            logger.info(
                "a peer of the overlay cannot be reached; the ring closes over it",
                metadata: ["peer.id": "\(peer.short)", "failures": "\(failures)"]
            )
        }
        wake.yield()
    }

    /// A peer with a smaller id most likely dials this node too: it is given a moment, so that usually one
    /// connection is made, not two (the engine settles a tie anyway). True when its session came meanwhile.
    private func waitedForTheirDial(_ peer: AuthorID) async -> Bool {
        guard plan.waitsForTheirDial(peer) else { return false }
        try? await Task.sleep(for: .milliseconds(1500))
        guard await network.engine.isConnected(peer) else { return false }
        plan.stopDialling(peer)
        wake.yield()
        return true
    }
}
