import ContinuumCore

/// Which peers a node keeps sessions with, out of all the peers it knows: the overlay's **active view**, bounded
/// by ``maxPeers``, chosen from the **passive view** (every peer that LAN discovery, the store's memory and
/// `--peer ID@HOST:PORT` name). A value, like ``SessionMachine``: the dialler performs what it decides.
///
/// The active view is a circulant graph over the peers everyone knows: all the known node ids and this node's own,
/// in ascending order, make a ring, and a node's neighbours are the nodes at the ring distances of
/// ``offsets(count:maxPeers:)``: ±1, ±3, ±9, ±27 … (then ±2, ±4, … where those coincide), as many as fit in
/// ``maxPeers``. So:
/// - two nodes that know the same peers choose each other or neither (the distances are symmetric), and every node
///   has the same number of neighbours;
/// - the overlay is connected (±1 alone is a cycle through every node), also after a partition heals, since both
///   sides compute their ring over everyone again;
/// - any node is at most a few hops from any other: a ring distance written in balanced ternary (digits −1, 0, 1
///   on 1, 3, 9, 27, …) is a path, so with 8 neighbours 50 nodes are at most 4 hops apart, 100 at most 5;
/// - a peer that leaves or crashes drops out of everyone's ring (when discovery removes it, or when dialling it
///   keeps failing: ``suspect(_:)``), and the ring closes over the gap.
///
/// HyParView (Leitão et al., 2007) keeps a random active view and repairs it from a passive view by messages; on a
/// LAN every node learns every other from discovery, so the ring needs no messages of its own, and a join is an
/// ordinary session. A peer dialling in is admitted when it is a neighbour here, or while there is room
/// (``admits(_:connected:)``); sessions beyond the bound that are not neighbours make room for neighbours not
/// connected yet (``excess(connected:dialable:)``).
public struct PeerView: Sendable, Hashable {
    public let own: AuthorID
    /// Sessions at most; 0: no bound (every known peer is a neighbour: a full mesh).
    public let maxPeers: Int
    /// The passive view: every peer known, with whether it is suspected gone.
    public private(set) var known: Set<AuthorID> = []
    /// Known peers left out of the ring because dialling them failed: gone until they are seen again.
    public private(set) var suspects: Set<AuthorID> = []

    public init(own: AuthorID, maxPeers: Int) {
        self.own = own
        self.maxPeers = maxPeers
    }

    /// A peer found (discovery, memory, configuration), or seen alive (a session with it): in the ring.
    public mutating func add(_ peer: AuthorID) {
        guard peer != own else { return }
        known.insert(peer)
        suspects.remove(peer)
    }

    /// A peer that discovery no longer shows: out of the ring (a session with it is kept while it lasts).
    public mutating func remove(_ peer: AuthorID) {
        known.remove(peer)
        suspects.remove(peer)
    }

    /// Dialling `peer` failed again: out of the ring until it is seen again (``add(_:)``).
    public mutating func suspect(_ peer: AuthorID) {
        if known.contains(peer) { suspects.insert(peer) }
    }

    /// The ring: this node and every known peer not suspected, in ascending order of id.
    public var ring: [AuthorID] { (Array(known.subtracting(suspects)) + [own]).sorted() }

    /// This node's neighbours: the nodes at ring distances ``offsets(count:maxPeers:)`` from it.
    public var neighbours: Set<AuthorID> {
        let ring = self.ring
        guard maxPeers > 0 else { return Set(ring.filter { $0 != own }) }
        guard let me = ring.firstIndex(of: own) else { return [] }
        return Set(Self.offsets(count: ring.count, maxPeers: maxPeers).map { ring[(me + $0) % ring.count] })
    }

    /// The ring distances (0 < d < count) to the neighbours of every node of a ring of `count` nodes: a set closed
    /// under d → count − d, with at most `maxPeers` elements. Distances ±1, ±3, ±9, … first (few hops between any
    /// two nodes), then ±2, ±4, ±5, … while any fit; a pair that does not fit whole is left out, so that the set
    /// stays symmetric.
    public static func offsets(count: Int, maxPeers: Int) -> [Int] {
        guard count > 1 else { return [] }
        var chosen: [Int] = []
        var seen = Set<Int>()
        var candidates: [Int] = []
        var power = 1
        while power < count {
            candidates.append(power)
            power *= 3
        }
        candidates += (2..<max(2, count)).filter { !candidates.contains($0) }
        for distance in candidates {
            let pair = Set([distance % count, (count - distance) % count]).subtracting([0])
            guard !pair.isEmpty, pair.isDisjoint(with: seen) else { continue }
            guard seen.count + pair.count <= maxPeers else {
                if seen.count + 1 > maxPeers { break }
                continue
            }
            seen.formUnion(pair)
            chosen += pair.sorted()
        }
        return chosen
    }

    /// Whether a session that `peer` dialled is kept, with `connected` the peers that have one now: a neighbour
    /// always; another while fewer than ``maxPeers`` sessions are up.
    public func admits(_ peer: AuthorID, connected: Set<AuthorID>) -> Bool {
        guard maxPeers > 0 else { return true }
        if neighbours.contains(peer) { return true }
        return connected.subtracting([peer]).count < maxPeers
    }

    /// The sessions to end so that the neighbours not connected yet (of those that can be dialled now) fit within
    /// ``maxPeers``: sessions with peers that are not neighbours, the farthest on the ring first.
    public func excess(connected: Set<AuthorID>, dialable: Set<AuthorID>) -> [AuthorID] {
        guard maxPeers > 0 else { return [] }
        let neighbours = self.neighbours
        let missing = neighbours.subtracting(connected).intersection(dialable).count
        let over = connected.count + missing - maxPeers
        guard over > 0 else { return [] }
        let others = connected.subtracting(neighbours)
        return Array(
            others.sorted { distance(to: $0) > distance(to: $1) || (distance(to: $0) == distance(to: $1) && $0 < $1) }
                .prefix(over)
        )
    }

    /// Ring distance from this node (the shorter way round); peers not on the ring are farthest.
    func distance(to peer: AuthorID) -> Int {
        let ring = self.ring
        guard let me = ring.firstIndex(of: own), let them = ring.firstIndex(of: peer) else { return Int.max }
        let forward = (them - me + ring.count) % ring.count
        return min(forward, ring.count - forward)
    }

    // MARK: The tree of a record

    /// The neighbours to which this node sends a record eagerly when it came from `root` (the node that wrote it),
    /// in the broadcast tree rooted there; nil when there is no such tree here (the root is not on the ring, or the
    /// bound leaves out distance 1), and the record goes eagerly to every neighbour.
    ///
    /// The tree: number the ring from the root, 0 … n − 1. Node p's parent is p − 3^j, with 3^j the lowest power of 3
    /// in p's digits (base 3; the highest power used may take any digit), so each node has exactly one parent, at a
    /// ring distance that is one of the neighbour distances. Every node is reached exactly once, in at most 2k + n/3^k
    /// hops (3^k the largest power used): 6 for 50 nodes, 8 for 100, 9 for 130. Two nodes that know the same peers draw the same
    /// tree; where views differ, a node may be reached twice or not at all, and HAVE repairs it.
    public func treeChildren(root: AuthorID) -> Set<AuthorID>? {
        let ring = self.ring
        guard maxPeers > 0, let origin = ring.firstIndex(of: root), let me = ring.firstIndex(of: own) else {
            return nil
        }
        let count = ring.count
        let powers = treePowers(count: count)
        guard !powers.isEmpty else { return nil }
        let position = (me - origin + count) % count
        return Set(Self.children(of: position, count: count, powers: powers).map { ring[(origin + $0) % count] })
    }

    /// This node's parent in the broadcast tree rooted at `root` (``treeChildren(root:)``): the neighbour it gets that
    /// node's records from; nil at the root, or without a tree.
    public func treeParent(root: AuthorID) -> AuthorID? {
        let ring = self.ring
        guard maxPeers > 0, let origin = ring.firstIndex(of: root), let me = ring.firstIndex(of: own), origin != me
        else { return nil }
        let powers = treePowers(count: ring.count)
        guard !powers.isEmpty else { return nil }
        let position = (me - origin + ring.count) % ring.count
        // The lowest power with a digit (base 3 below the highest power, any digit at it).
        let lowest =
            powers.indices.first { index in
                let above = index + 1 < powers.count ? position % powers[index + 1] : position
                return above / powers[index] > 0
            } ?? powers.count - 1
        return ring[(position - powers[lowest] + origin) % ring.count]
    }

    /// The powers of 3 the tree steps by: those below the ring's size that are neighbour distances.
    func treePowers(count: Int) -> [Int] {
        let offsets = Set(Self.offsets(count: count, maxPeers: maxPeers))
        var powers: [Int] = []
        var power = 1
        while power < count, offsets.contains(power) {
            powers.append(power)
            power *= 3
        }
        return powers
    }

    /// The children of position `p` in the tree of a ring of `count` positions rooted at 0, with these powers of 3
    /// (1, 3, 9, …) as the only steps.
    public static func children(of p: Int, count: Int, powers: [Int]) -> [Int] {
        // The digits of p: base 3 below the highest power, any value at it.
        var digits: [Int] = []
        var rest = p
        for (index, power) in powers.enumerated().reversed() {
            let digit = index == powers.count - 1 ? rest / power : rest / power
            digits.insert(digit, at: 0)
            rest -= digit * power
        }
        let lowest = p == 0 ? powers.count : digits.firstIndex { $0 != 0 }!
        var children: [Int] = []
        for index in 0..<min(lowest + 1, powers.count) {
            let child = p + powers[index]
            guard child < count else { continue }
            if index < lowest {
                children.append(child)
            } else if index == powers.count - 1 || digits[index] < 2 {
                // Adding at the lowest digit itself: only without a carry (the highest digit never carries).
                children.append(child)
            }
        }
        return children
    }
}
