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
/// neighbour that cannot be reached is tried again with back-off; after ``suspectAfter`` failures in a row it is
/// suspected gone and leaves the ring, so the ring closes over it, and it is tried again every
/// ``probeInterval`` (a healed partition, a restarted node). A neighbour that answers busy is tried again later.
/// With `--max-peers 0` every known peer is a neighbour: a full mesh, as before the overlay.
actor OverlayDialer {
    private let network: SyncNetwork
    private let logger: Logger
    private var view: PeerView
    private var addresses: [AuthorID: PeerAddress] = [:]
    /// Peers known other than by discovery (memory, configuration): discovery's removal does not remove them.
    private var pinned: Set<AuthorID> = []
    private var dialling: Set<AuthorID> = []
    private var retryAt: [AuthorID: ContinuousClock.Instant] = [:]
    private var failures: [AuthorID: Int] = [:]
    /// When dialling each failing peer first failed (in this run of failures).
    private var failingSince: [AuthorID: ContinuousClock.Instant] = [:]
    /// Told of every peer discovery finds (its open groups, for `--join-open`).
    private let onFound: @Sendable (DiscoveredPeer) async -> Void
    private let wakes: AsyncStream<Void>
    private let wake: AsyncStream<Void>.Continuation

    static let suspectAfter = 3
    /// A peer is suspected only once dialling it has failed for this long, too: a node that is still starting (a
    /// crowd started together) is not taken off the ring by everyone at once.
    static let suspectAfterTime: Duration = .seconds(10)
    static let probeInterval: Duration = .seconds(20)
    static let busyRetry: Duration = .seconds(30)

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
        view = PeerView(own: own, maxPeers: maxPeers)
        (wakes, wake) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
    }

    /// Peers known by id from memory or configuration, dialled as the view says.
    func add(pinned peers: [(node: AuthorID, address: PeerAddress)]) {
        for (node, address) in peers where node != view.own {
            addresses[node] = address
            pinned.insert(node)
            view.add(node)
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
        case .found(let peer):
            guard peer.node != view.own else { return }
            addresses[peer.node] = PeerAddress(host: peer.host, port: Int(peer.port))
            view.add(peer.node)
            failures[peer.node] = nil
            failingSince[peer.node] = nil
            retryAt[peer.node] = nil
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
            guard !pinned.contains(node) else { return }
            view.remove(node)
            wake.yield()
        }
    }

    /// A session with `peer` is up (either side dialled): it is alive, so it is on the ring again.
    private func seen(_ peer: AuthorID) {
        guard addresses[peer] != nil else { return }
        failures[peer] = nil
        failingSince[peer] = nil
        if view.suspects.contains(peer) {
            view.add(peer)
            wake.yield()
        }
    }

    /// Dials the neighbours not connected, ends sessions the bound has no room for, and tells the engine the
    /// neighbours.
    private func reconcile() async -> [AuthorID] {
        let engine = network.engine
        let everyone = Set(await engine.connectedPeers())
        // Sessions that do not count in the bound (`--peer HOST:PORT`, a join's) are neither ended nor dialled.
        let connected = await engine.overlayPeers()
        let now = ContinuousClock.now
        let neighbours = view.neighbours
        await engine.setView(view)
        let dialable = Set(view.known.filter { addresses[$0] != nil && (retryAt[$0].map { $0 <= now } ?? true) })
        // Room is made only for neighbours that answered their last dial: ending a working session for one that
        // keeps failing would help no one.
        // Nor for a neighbour with a session outside the bound already (`--peer HOST:PORT`).
        let wanted = dialable.filter { failures[$0] == nil && !everyone.contains($0) }
        for peer in view.excess(connected: connected, dialable: wanted) {
            logger.info("ending a session to make room for a neighbour", metadata: ["peer.id": "\(peer.short)"])
            await engine.dismiss(
                peer,
                WireError(
                    .busy,
                    "this node keeps \(view.maxPeers) sessions (--max-peers) and needs this one for a neighbour in the overlay"
                )
            )
        }
        var targets = neighbours
        // Suspects are probed now and then: a node restarted, or a partition healed.
        targets.formUnion(view.suspects)
        let dial = targets.sorted().filter {
            !everyone.contains($0) && !dialling.contains($0) && dialable.contains($0)
        }
        dialling.formUnion(dial)
        return dial
    }

    /// Dials `peer` and runs the session to its end, then settles when to dial it again.
    private func dial(_ peer: AuthorID) async {
        guard let address = addresses[peer] else {
            dialling.remove(peer)
            return
        }
        if await waitedForTheirDial(peer) { return }
        let started = ContinuousClock.now
        let (reason, reached) = await network.connect(to: address, expected: peer)
        dialling.remove(peer)
        if await network.engine.isConnected(peer) {
            // The peer's own connection won the tie (or replaced this one): nothing failed.
            failures[peer] = nil
            failingSince[peer] = nil
            wake.yield()
            return
        }
        logger.info(
            "session with a peer of the overlay ended",
            metadata: ["peer.id": "\(peer.short)", "peer.address": "\(address)", "reason": "\(reason)"]
        )
        scheduleRetry(peer, reason: reason, reached: reached, started: started)
        wake.yield()
    }

    /// A peer with a smaller id most likely dials this node too: it is given a moment, so that usually one
    /// connection is made, not two (the engine settles a tie anyway). True when its session came meanwhile.
    private func waitedForTheirDial(_ peer: AuthorID) async -> Bool {
        guard view.own > peer, failures[peer] == nil else { return false }
        try? await Task.sleep(for: .milliseconds(1500))
        guard await network.engine.isConnected(peer) else { return false }
        dialling.remove(peer)
        wake.yield()
        return true
    }

    /// When to dial `peer` again, after a session or a dial that ended with `reason` (`reached`: whose HELLO came,
    /// if any; `started`: when the dial began).
    private func scheduleRetry(_ peer: AuthorID, reason: String, reached: AuthorID?, started: ContinuousClock.Instant) {
        let now = ContinuousClock.now
        if reached == peer {
            // It answered (its HELLO came): alive, so on the ring again and not failing, whatever became of the
            // session (a probe of a suspect that this node, full, then refused itself).
            view.add(peer)
            failures[peer] = nil
            failingSince[peer] = nil
        }
        if reason.contains("this node is full") {
            // Refused here (a suspect's probe): the view has just changed, so look again soon.
            retryAt[peer] = now + .milliseconds(Int.random(in: 100...500))
        } else if reason.contains("refused: \(WireError.Code.busy)") {
            retryAt[peer] = now + Self.busyRetry * Double.random(in: 0.75...1.25)
        } else if reached == peer && now - started > .seconds(10) {
            failures[peer] = nil
            failingSince[peer] = nil
            retryAt[peer] = now + .milliseconds(Int.random(in: 100...500))
        } else {
            backOff(peer, reached: reached, now: now)
        }
    }

    /// A dial that failed: tried again after a back-off that grows with the failures in a row; a peer that did not
    /// answer for ``suspectAfter`` dials and ``suspectAfterTime`` is suspected gone and probed now and then.
    private func backOff(_ peer: AuthorID, reached: AuthorID?, now: ContinuousClock.Instant) {
        let count = (failures[peer] ?? 0) + 1
        failures[peer] = count
        let since = failingSince[peer] ?? now
        failingSince[peer] = since
        // A peer that answered is alive: it is backed off, never suspected.
        if reached != peer, count >= Self.suspectAfter, now - since >= Self.suspectAfterTime,
            !view.suspects.contains(peer)
        {
            view.suspect(peer)
            logger.info(
                "a peer of the overlay cannot be reached; the ring closes over it",
                metadata: ["peer.id": "\(peer.short)", "failures": "\(count)"]
            )
        }
        let base =
            view.suspects.contains(peer)
            ? Self.probeInterval : .milliseconds(Int(min(30, 0.25 * pow(2, Double(min(count, 10)))) * 1000))
        retryAt[peer] = now + base * Double.random(in: 0.75...1.25)
    }
}
