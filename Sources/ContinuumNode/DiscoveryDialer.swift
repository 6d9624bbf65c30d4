import ContinuumCore
import ContinuumDiscovery
import ContinuumSync
import Foundation
import Logging

/// Dials the peers that LAN discovery finds: one dialler per node id, whatever number of services and addresses
/// that node shows, so a peer is never dialled twice by this path.
///
/// A dialler keeps the session up with back-off while the peer is advertised. When the service is removed the
/// peer is marked gone, but a working session is kept; the dialler ends once that session ends, and starts
/// again if the peer is found again. Of two nodes that find each other, the one with the larger id waits a
/// moment before dialling, so that usually one connection is made, not two (the engine settles a tie anyway).
actor DiscoveryDialer {
    private let network: SyncNetwork
    private let own: AuthorID
    private let logger: Logger
    private var peers: [AuthorID: DiscoveredPeer] = [:]
    private var present: Set<AuthorID> = []
    private var dialling: Set<AuthorID> = []
    /// Told of every peer found (its open groups, for `--join-open`).
    private let onFound: @Sendable (DiscoveredPeer) async -> Void

    init(
        network: SyncNetwork,
        own: AuthorID,
        logger: Logger,
        onFound: @escaping @Sendable (DiscoveredPeer) async -> Void = { _ in }
    ) {
        self.network = network
        self.own = own
        self.logger = logger
        self.onFound = onFound
    }

    /// Consumes discovery's events until they end or the task is cancelled.
    func run(_ events: AsyncStream<DiscoveryEvent>) async {
        await withDiscardingTaskGroup { group in
            for await event in events {
                switch event {
                case .found(let peer):
                    guard peer.node != own else { continue }
                    peers[peer.node] = peer
                    present.insert(peer.node)
                    logger.info(
                        "discovered a peer",
                        metadata: [
                            "peer.id": "\(peer.node.short)", "peer.name": "\(peer.name)",
                            "peer.address": "\(PeerAddress(host: peer.host, port: Int(peer.port)))",
                        ]
                    )
                    if dialling.insert(peer.node).inserted {
                        group.addTask { await self.dial(peer.node) }
                    }
                    if !peer.openGroups.isEmpty { group.addTask { await self.onFound(peer) } }
                case .removed(let node):
                    present.remove(node)
                    logger.info("a discovered peer is gone", metadata: ["peer.id": "\(node.short)"])
                }
            }
            group.cancelAll()
        }
    }

    /// Where to dial `node` now; nil (and the dialler ends) once it is gone. Atomic with the bookkeeping, so that
    /// a peer found again right after is dialled by a new dialler.
    private func target(_ node: AuthorID) -> PeerAddress? {
        guard present.contains(node), let peer = peers[node] else {
            dialling.remove(node)
            return nil
        }
        return PeerAddress(host: peer.host, port: Int(peer.port))
    }

    private func dial(_ node: AuthorID) async {
        var attempt = 0
        var first = true
        while !Task.isCancelled {
            if await network.engine.connectedPeers().contains(node) {
                // Connected (either way round): keep it, even after the service is removed.
                first = false
                try? await Task.sleep(for: .seconds(1))
                continue
            }
            if first && own > node {
                // The peer dials us: give it a moment before dialling too.
                first = false
                try? await Task.sleep(for: .milliseconds(1500))
                continue
            }
            first = false
            guard let address = target(node) else { return }
            let started = ContinuousClock.now
            let (reason, _) = await network.connect(to: address, expected: node)
            logger.info(
                "session with a discovered peer ended",
                metadata: ["peer.id": "\(node.short)", "peer.address": "\(address)", "reason": "\(reason)"]
            )
            attempt = ContinuousClock.now - started > .seconds(10) ? 0 : attempt + 1
            let base = min(30, 0.25 * pow(2, Double(min(attempt, 10))))
            try? await Task.sleep(for: .milliseconds(Int(base * Double.random(in: 0.75...1.25) * 1000)))
        }
    }
}
