/// The records of one account and the relations the account rule reads from them (AccountRules): within, cuts, add
/// paths, ancestors, and "depends on" between removals, decided component by component.
struct AccountGraph<Key: Hashable & Sendable, ID: Hashable & Sendable> {
    typealias Event = AccountEvent<Key, ID>

    /// The records by id.
    let events: [ID: Event]
    /// The founder and the recovery key: their add path is empty.
    let roots: Set<Key>
    /// The recovery key, whose removals count and which nothing removes.
    let recovery: Key?
    /// The adds that can lie on a path: every add except those of a root (which add nothing).
    let adds: [Event]
    /// For each key, the adds it signed.
    let addsBy: [Key: [Event]]

    /// Indexes `records`; records with one id are taken as one.
    init(records: [Event], founder: Key, recovery: Key?) {
        var events: [ID: Event] = [:]
        for record in records { events[record.id] = record }
        self.events = events
        let roots: Set<Key> = recovery.map { [founder, $0] } ?? [founder]
        self.roots = roots
        self.recovery = recovery
        self.adds = events.values.filter { $0.added.map { !roots.contains($0) } ?? false }
        self.addsBy = Dictionary(grouping: adds, by: \.author)
    }

    // MARK: Within and cuts (§V3.4)

    /// Whether the record `id` at `sequence` of `log` is within `frontier`: the log is listed, the sequence is at most
    /// `through`, and the records from `head` back to `sequence` are held and chained by `previous` to `id`.
    static func within(
        log: Key,
        sequence: UInt64,
        id: ID,
        frontier: [Key: AccountFrontierEntry<ID>],
        previous: (ID) -> ID?
    ) -> Bool {
        guard let entry = frontier[log], sequence <= entry.through, var current = entry.head else { return false }
        var at = entry.through
        while at > sequence {
            guard let before = previous(current) else { return false }
            current = before
            at -= 1
        }
        return current == id
    }

    /// Whether `record` is within `removal`, walking the chain through the held account records.
    func within(_ record: Event, _ removal: Event) -> Bool {
        guard let frontier = removal.removal?.frontier else { return false }
        return Self.within(log: record.author, sequence: record.sequence, id: record.id, frontier: frontier) { id in
            events[id].flatMap { $0.author == record.author ? $0.previous : nil }
        }
    }

    /// Whether `removal` cuts `record`: a record of the removed key not within the removal, unless it is that key's
    /// removal of the remover (a mutual removal).
    func cuts(_ record: Event, by removal: Event) -> Bool {
        guard let target = removal.removal?.device, record.author == target, !within(record, removal) else {
            return false
        }
        return record.removal?.device != removal.author
    }

    // MARK: Add paths

    /// The keys reached from `starts` over adds not in `skipping` and not signed by `excluded`.
    func reached(from starts: Set<Key>, skipping: Set<ID> = [], excluded: Key? = nil) -> Set<Key> {
        var seen = starts
        var todo = Array(starts)
        while let key = todo.popLast() {
            guard key != excluded else { continue }
            for add in addsBy[key] ?? [] where !skipping.contains(add.id) {
                guard let target = add.added, !seen.contains(target) else { continue }
                seen.insert(target)
                todo.append(target)
            }
        }
        return seen
    }

    /// Whether `key` has an add path none of whose adds is in `skipping`.
    func hasPath(_ key: Key, skipping: Set<ID> = []) -> Bool {
        reached(from: roots, skipping: skipping).contains(key)
    }

    /// The keys other than `key` that sign an add on every add path of `key`; none for a root or a key with no path.
    func ancestors(of key: Key) -> Set<Key> {
        guard !roots.contains(key), hasPath(key) else { return [] }
        return Set(addsBy.keys.filter { $0 != key && !reached(from: roots, excluded: $0).contains(key) })
    }

    /// Whether `removal` cuts an add that lies on some add path of `key`.
    func cutsAPath(of key: Key, by removal: Event) -> Bool {
        guard !roots.contains(key) else { return false }
        return adds.contains { add in
            cuts(add, by: removal) && hasPath(add.author) && add.added.map { reached(from: [$0]).contains(key) } == true
        }
    }

    // MARK: The procedure (§V3.5)

    /// Whether removal `r` depends on removal `s` (s is decided first): s cuts r or a path of r's author, unless r's
    /// target is an ancestor of s's author and r cuts an add on a path of s's author.
    func depends(_ r: Event, on s: Event) -> Bool {
        guard cuts(r, by: s) || cutsAPath(of: r.author, by: s) else { return false }
        guard let target = r.removal?.device, ancestors(of: s.author).contains(target) else { return true }
        return !cutsAPath(of: s.author, by: r)
    }

    /// The removals that are kept: signed by the recovery key or by a key with an add path, not naming the recovery
    /// key.
    func keptRemovals() -> [Event] {
        events.values.filter { event in
            guard let target = event.removal?.device, target != recovery else { return false }
            return event.author == recovery || hasPath(event.author)
        }
    }

    /// The removals that count, decided component by component, dependencies first.
    func countingRemovals() -> [Event] {
        let kept = keptRemovals()
        let dependencies = Dictionary(
            uniqueKeysWithValues: kept.map { r in (r.id, kept.filter { s in s.id != r.id && depends(r, on: s) }) }
        )
        var decided: [ID: Bool] = [:]
        for component in StronglyConnected(nodes: kept.map(\.id), edges: { dependencies[$0]?.map(\.id) ?? [] })
            .components
        {
            for id in component {
                guard let removal = events[id] else { continue }
                let judges = (dependencies[id] ?? []).filter { !component.contains($0.id) && decided[$0.id] == true }
                decided[id] = judge(removal, by: judges)
            }
        }
        return kept.filter { decided[$0.id] == true }
    }

    /// Rules 1 and 2: a removal by the recovery key counts; any other counts when none of `judges` (the counting
    /// removals it depends on, outside its component) cuts it, and its author keeps an add path that neither they
    /// nor the removal itself cut.
    func judge(_ removal: Event, by judges: [Event]) -> Bool {
        if removal.author == recovery { return true }
        if judges.contains(where: { cuts(removal, by: $0) }) { return false }
        let cut = adds.filter { add in
            cuts(add, by: removal) || judges.contains { cuts(add, by: $0) }
        }
        return hasPath(removal.author, skipping: Set(cut.map(\.id)))
    }
}

/// The strongly connected components of a directed graph (Tarjan's algorithm), each component listed after every
/// component it has an edge to: with "depends on" edges, dependencies come first.
struct StronglyConnected<Node: Hashable> {
    /// The components, dependencies first.
    private(set) var components: [Set<Node>] = []
    /// The order in which each node was first visited.
    private var index: [Node: Int] = [:]
    private var stack: [Node] = []
    private var onStack: Set<Node> = []

    /// Finds the components of the graph of `nodes` whose edges from a node are `edges(node)`.
    init(nodes: [Node], edges: (Node) -> [Node]) {
        for node in nodes where index[node] == nil { _ = visit(node, edges: edges) }
    }

    /// Visits `node` and what it reaches; returns its low link (the smallest index it reaches on the stack) and
    /// appends its component once `node` is the component's first visited node.
    private mutating func visit(_ node: Node, edges: (Node) -> [Node]) -> Int {
        let own = index.count
        index[node] = own
        var low = own
        stack.append(node)
        onStack.insert(node)
        for next in edges(node) {
            if let seen = index[next] {
                if onStack.contains(next) { low = min(low, seen) }
            } else {
                low = min(low, visit(next, edges: edges))
            }
        }
        guard low == own else { return low }
        var component: Set<Node> = []
        while let top = stack.popLast() {
            onStack.remove(top)
            component.insert(top)
            if top == node { break }
        }
        components.append(component)
        return low
    }
}
