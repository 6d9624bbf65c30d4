import ContinuumCore
import ContinuumSession
import Foundation
import Testing

/// The overlay's active view (``PeerView``): bounded, symmetric, connected, few hops, healing.
@Suite("Peer view: the overlay's active view")
struct PeerViewTests {
    /// Node ids in random order (their order on the ring is their byte order, not their index).
    static func ids(_ count: Int, seed: UInt64) -> [AuthorID] {
        var random = SeededGenerator(state: seed)
        return (0..<count).map { _ in
            AuthorID(unchecked: Data((0..<32).map { _ in UInt8.random(in: 0...255, using: &random) }))
        }
    }

    /// Each node's view when all know the same `nodes` (less the suspects).
    static func views(_ nodes: [AuthorID], maxPeers: Int, suspects: Set<AuthorID> = []) -> [AuthorID: PeerView] {
        var views: [AuthorID: PeerView] = [:]
        for node in nodes {
            var view = PeerView(own: node, maxPeers: maxPeers)
            for other in nodes { view.add(other) }
            for suspect in suspects { view.suspect(suspect) }
            views[node] = view
        }
        return views
    }

    /// Hops from `start` to every node reachable over the neighbour relation (both directions of a session count).
    static func hops(from start: AuthorID, _ views: [AuthorID: PeerView]) -> [AuthorID: Int] {
        var edges: [AuthorID: Set<AuthorID>] = [:]
        for (node, view) in views {
            for neighbour in view.neighbours where views[neighbour] != nil {
                edges[node, default: []].insert(neighbour)
                edges[neighbour, default: []].insert(node)
            }
        }
        var distance = [start: 0]
        var frontier = [start]
        while !frontier.isEmpty {
            var next: [AuthorID] = []
            for node in frontier {
                for neighbour in edges[node] ?? [] where distance[neighbour] == nil {
                    distance[neighbour] = distance[node]! + 1
                    next.append(neighbour)
                }
            }
            frontier = next
        }
        return distance
    }

    @Test("the distances are symmetric, distinct and at most max-peers, for every ring size")
    func offsets() {
        for maxPeers in [1, 2, 3, 4, 8, 12] {
            for count in 1...130 {
                let offsets = PeerView.offsets(count: count, maxPeers: maxPeers)
                #expect(offsets.count <= maxPeers)
                #expect(Set(offsets).count == offsets.count)
                #expect(offsets.allSatisfy { (1..<count).contains($0) })
                #expect(Set(offsets) == Set(offsets.map { count - $0 }), "ring \(count), max \(maxPeers): \(offsets)")
                // Small rings are full meshes.
                if count - 1 <= maxPeers { #expect(offsets.count == count - 1) }
            }
        }
        #expect(Set(PeerView.offsets(count: 50, maxPeers: 8)) == [1, 49, 3, 47, 9, 41, 27, 23])
    }

    @Test("50 and 100 nodes: 8 neighbours each, chosen both ways, connected within 4 and 5 hops")
    func crowd() {
        for (count, diameter) in [(50, 4), (100, 5), (20, 3)] {
            let nodes = Self.ids(count, seed: UInt64(count))
            let views = Self.views(nodes, maxPeers: 8)
            for (node, view) in views {
                #expect(view.neighbours.count == 8)
                for neighbour in view.neighbours {
                    #expect(
                        views[neighbour]!.neighbours.contains(node),
                        "\(node.short) – \(neighbour.short) is one-sided"
                    )
                }
            }
            for node in nodes.prefix(10) {
                let hops = Self.hops(from: node, views)
                #expect(hops.count == count)
                #expect((hops.values.max() ?? 0) <= diameter, "\(count) nodes: \(hops.values.max() ?? 0) hops")
            }
        }
    }

    @Test("max-peers 0 is a full mesh; admission and excess keep the bound")
    func admissionAndExcess() {
        let nodes = Self.ids(30, seed: 7)
        var mesh = PeerView(own: nodes[0], maxPeers: 0)
        for node in nodes { mesh.add(node) }
        #expect(mesh.neighbours.count == 29)
        #expect(mesh.admits(nodes[5], connected: Set(nodes.dropFirst())))

        let view = Self.views(nodes, maxPeers: 4)[nodes[0]]!
        let neighbours = view.neighbours
        let others = Set(nodes.dropFirst()).subtracting(neighbours).sorted()
        // A neighbour is admitted even when full; another only while there is room.
        #expect(view.admits(neighbours.first!, connected: Set(others.prefix(4))))
        #expect(!view.admits(others[5], connected: Set(others.prefix(4))))
        #expect(view.admits(others[5], connected: Set(others.prefix(3))))
        // Full of non-neighbours while neighbours wait: as many sessions end as neighbours can be dialled.
        let excess = view.excess(connected: Set(others.prefix(4)), dialable: neighbours)
        #expect(excess.count == 4)
        #expect(Set(excess).isSubset(of: Set(others.prefix(4))))
        // Neighbours that cannot be dialled now (back-off) make no room.
        #expect(view.excess(connected: Set(others.prefix(4)), dialable: []).isEmpty)
        // Never a neighbour.
        #expect(view.excess(connected: Set(others.prefix(3)).union(neighbours), dialable: neighbours).count == 3)
    }

    /// Random joins, leaves and crashes (a crashed node is suspected by those that dial it and fail), in any order:
    /// after each step, once every node's view has caught up, the live nodes' overlay is connected, within the bound,
    /// and one-sided choices exist only between views that differ.
    @Test("property: random joins, leaves and crashes keep the overlay connected, bounded and symmetric")
    func randomChurn() {
        for seed in 0..<40 {
            var random = SeededGenerator(state: UInt64(seed) &+ 1000)
            let pool = Self.ids(60, seed: UInt64(seed))
            var live = Set(pool.prefix(Int.random(in: 2...30, using: &random)))
            var crashed: Set<AuthorID> = []
            for step in 0..<60 {
                switch Int.random(in: 0..<4, using: &random) {
                case 0:
                    if let node = pool.filter({ !live.contains($0) && !crashed.contains($0) }).randomElement(
                        using: &random
                    ) {
                        live.insert(node)
                    }
                case 1:
                    if live.count > 2, let node = live.randomElement(using: &random) { live.remove(node) }
                case 2:
                    if live.count > 2, let node = live.randomElement(using: &random) {
                        live.remove(node)
                        crashed.insert(node)
                    }
                default:
                    // A crashed node restarts.
                    if let node = crashed.randomElement(using: &random) {
                        crashed.remove(node)
                        live.insert(node)
                    }
                }
                // Discovery still shows the crashed nodes (no goodbye was said): every view knows them, and
                // suspects them once dialling them failed.
                let views = Self.views(Array(live.union(crashed)), maxPeers: 8, suspects: crashed)
                    .filter { live.contains($0.key) }
                // Each view's neighbours are computed once, and the rules checked over all of them with one
                // expectation a step (an expectation per pair, and the neighbours computed again for each, made this test
                // three times slower, for the same checks).
                let neighbours = views.mapValues(\.neighbours)
                var broken: [String] = []
                for (node, chosen) in neighbours {
                    if chosen.count > 8 { broken.append("\(node.short) has \(chosen.count) neighbours") }
                    if chosen.contains(node) { broken.append("\(node.short) is its own neighbour") }
                    for neighbour in chosen {
                        if crashed.contains(neighbour) {
                            broken.append("\(node.short) keeps crashed \(neighbour.short)")
                        }
                        if neighbours[neighbour]?.contains(node) != true {
                            broken.append("\(node.short) → \(neighbour.short) is one-sided")
                        }
                    }
                }
                #expect(broken.isEmpty, "seed \(seed), step \(step): \(broken.prefix(5))")
                let start = live.first!
                let reached = Self.hops(from: start, views)
                #expect(reached.count == live.count, "seed \(seed), step \(step): \(reached.count) of \(live.count)")
            }
        }
    }

    @Test("a view that lags (a peer not found yet) is still connected through the others")
    func laggingView() {
        let nodes = Self.ids(40, seed: 99)
        var views = Self.views(nodes, maxPeers: 8)
        // Node 0 has not found nodes 1 … 9 yet.
        var lagging = PeerView(own: nodes[0], maxPeers: 8)
        for node in nodes.dropFirst(10) { lagging.add(node) }
        views[nodes[0]] = lagging
        #expect(Self.hops(from: nodes[0], views).count == 40)
    }
}
