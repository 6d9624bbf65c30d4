import AsyncAlgorithms
import ContinuumCore
import ContinuumMedia
import ContinuumSession
import ContinuumWire
import Foundation
import Logging
import NIOCore

/// The sync side of a node: its authenticated sessions, live gossip between them, anti-entropy rounds, and the
/// photo fetcher. Connections come from ``SyncNetwork``; this type never touches sockets directly.
public actor SyncEngine {
    let store: any SyncStorage
    let identity: NodeIdentity
    let configuration: SyncConfiguration
    let logger: Logger
    let photos: PhotoFetcher
    /// Thumbnails: served to peers that ask, fetched from peers before photos (nil: neither).
    nonisolated let thumbnails: ThumbnailService?

    var sessions: [AuthorID: PeerSession] = [:]
    /// Who belongs to which group, as last read from the store (``refreshMembership()``).
    var membership: MembershipView?
    /// The port actually bound, once known (the configuration may say 0: any free port).
    private var listenPort: UInt16?

    /// Sets the port sent in HELLO, so that peers can dial this node back.
    public func setListenPort(_ port: UInt16) { listenPort = port }
    private var gossipedThrough: Int64 = 0
    private var subscribers: [UUID: AsyncStream<SyncEvent>.Continuation] = [:]
    /// The newest notification already emitted as an event.
    private var notifiedThrough: Int64 = 0
    /// Posts this node follows, as last read from the store.
    private var follows: Set<PostID> = []
    /// Per connected peer: the posts it asked to have pushed, and how many hops away their follower is.
    private var interest: [AuthorID: [PostID: UInt8]] = [:]
    /// Increases with every advertisement computed, so that a session can drop one overtaken by a newer one.
    private var interestVersion: UInt64 = 0
    private let wakes: AsyncStream<Void>
    private let wake: AsyncStream<Void>.Continuation
    /// Wakes the interest relay: some peer's interest changed (coalesced: at most one advertisement per
    /// ``SyncConfiguration/interestRelayInterval``).
    private let interestWakes: AsyncStream<Void>
    private let interestWake: AsyncStream<Void>.Continuation

    public init(
        store: any SyncStorage,
        identity: NodeIdentity,
        configuration: SyncConfiguration,
        logger: Logger,
        thumbnails: ThumbnailService? = nil
    ) {
        self.store = store
        self.identity = identity
        self.configuration = configuration
        self.logger = logger
        self.thumbnails = thumbnails
        photos = PhotoFetcher(store: store, configuration: configuration, thumbnails: thumbnails, logger: logger)
        (wakes, wake) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        (interestWakes, interestWake) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
    }

    /// Our HELLO, with a new nonce.
    var hello: Hello {
        Hello(
            protocolVersion: WireLimits.protocolVersion,
            nonce: .random(),
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

    /// The overlay's view (``PeerView``), as the dialler last computed it: a peer that dials in is admitted when it
    /// is a neighbour, or while fewer than ``SyncConfiguration/maxPeers`` sessions are up; new records go eagerly to
    /// the neighbours that are their children in the tree of the node that wrote them, and as HAVE to the others.
    private var overlay: PeerView?
    private var neighbours: Set<AuthorID> = []

    /// Sets the overlay's view, for admitting the sessions peers dial (``register(_:)``) and for tree push.
    public func setView(_ view: PeerView) {
        guard view != overlay else { return }
        overlay = view
        neighbours = view.neighbours
    }

    /// Ends the session with `peer`, if there is one and it counts in the overlay's bound, telling it why.
    public func dismiss(_ peer: AuthorID, _ error: WireError) async {
        guard let session = sessions[peer], !session.pinned else { return }
        await session.close(reporting: error)
    }

    /// Adds a session, keeping one per peer: when both nodes dialled each other, the connection dialled by the
    /// node with the smaller id wins, on both sides. A session (dialled either way, and not pinned) that would take
    /// this node over ``SyncConfiguration/maxPeers`` takes the place of a session with a non-neighbour when its peer is
    /// a neighbour, and is refused (the ERROR returned) otherwise (``AdmissionRules``).
    func register(_ session: PeerSession) async -> WireError? {
        let standing = Self.standing(of: session)
        switch AdmissionRules.room(
            for: standing,
            existing: sessions.mapValues(Self.standing),
            neighbours: neighbours,
            maxPeers: configuration.maxPeers
        ) {
        case .free: break
        case .refuse(let error): return error
        case .evict(let other): await makeRoom(ending: other)
        }
        // Decided after the room is made: another session with the peer may have come meanwhile.
        switch AdmissionRules.duplicate(
            standing,
            existing: sessions[session.peer].map(Self.standing),
            us: identity.author
        )
        {
        case .none: break
        case .refuse(let error): return error
        case .replace(let error): await sessions[session.peer]?.close(reporting: error)
        }
        sessions[session.peer] = session
        // The groups may have changed since the connection was admitted (a removal just stored): the scope takes
        // the view of now, and a session left with no group ends at once.
        if let membership, session.scope.update(membership).isEmpty {
            Task {
                await session.close(
                    reporting: WireError(.notMember, "this node shares no group with you any more")
                )
            }
        }
        await rememberConnected(session)
        emit(.peerJoined(session.peer, name: session.hello.name))
        await photos.peerJoined(session.peer, session: session.token)
        logger.info(
            "peer connected",
            metadata: ["peer.id": "\(session.peer.short)", "peer.name": "\(session.hello.name ?? "")"]
        )
        return nil
    }

    /// What registration decides a session on.
    private static func standing(of session: PeerSession) -> AdmissionRules.Standing {
        AdmissionRules.Standing(peer: session.peer, initiator: session.initiator, pinned: session.pinned)
    }

    /// Ends the session with `peer` (not a neighbour) to make room for a neighbour's.
    private func makeRoom(ending peer: AuthorID) async {
        guard let ending = sessions[peer] else { return }
        await ending.close(
            reporting: WireError(
                .busy,
                "this node keeps \(configuration.maxPeers) sessions (--max-peers) and needs this one for a "
                    + "neighbour in the overlay"
            )
        )
        // Its end is recorded now (peer state, counters, interest, `watch`), before the new one counts.
        await unregister(ending, reason: "ended to make room for a neighbour in the overlay")
    }

    /// Remembers the session's peer as connected, for `peers` and the next start's dialling.
    private func rememberConnected(_ session: PeerSession) async {
        do {
            try await store.rememberPeer(
                session.peer,
                name: session.hello.name,
                host: session.host,
                port: Int(session.hello.listenPort),
                state: "connected"
            )
        } catch {
            // The session works without it; only `peers` and the next start's dialling miss this peer.
            logger.error(
                "remembering a peer failed",
                metadata: ["peer.id": "\(session.peer.short)", "error": "\(error)"]
            )
        }
    }

    func unregister(_ session: PeerSession, reason: String) async {
        let stats = await session.takeStats()
        await session.close()
        guard sessions[session.peer] === session else { return }
        sessions[session.peer] = nil
        if interest.removeValue(forKey: session.peer) != nil { interestWake.yield() }
        // Recorded even while the node shuts down: a new task does not inherit this one's cancellation.
        let store = self.store
        let logger = self.logger
        await Task {
            do {
                try await store.updatePeer(session.peer, state: "disconnected", stats: stats)
            } catch {
                logger.failure("recording a session's end failed", error)
            }
        }.value
        await photos.peerLeft(session.peer, session: session.token)
        emit(.peerLeft(session.peer, reason: reason))
        logger.info("peer disconnected", metadata: ["peer.id": "\(session.peer.short)", "reason": "\(reason)"])
    }

    func session(for peer: AuthorID) -> PeerSession? { sessions[peer] }

    /// Photos larger than this are not fetched by themselves (`--max-photo-mb`).
    public nonisolated var maxPhotoBytes: UInt64 { configuration.maxPhotoBytes }

    /// Fetches a photo now, whatever its size (photos over `--max-photo-mb` are otherwise skipped).
    public func fetchPhoto(_ hash: AssetHash) async {
        await photos.fetchOnDemand(hash)
    }

    /// Peers with a session now.
    public func connectedPeers() -> [AuthorID] { sessions.keys.sorted() }

    /// Peers with a session now that counts in the overlay's bound (not `--peer HOST:PORT`, not a join's before the
    /// joiner holds the group's history: ``PeerSession/pinned``).
    public func overlayPeers() -> Set<AuthorID> { Set(sessions.filter { !$0.value.pinned }.keys) }

    /// Whether a session with `peer` is up now.
    public func isConnected(_ peer: AuthorID) -> Bool { sessions[peer] != nil }

    /// The connected peers, in order, each with the groups its session shares.
    func connectedPeerGroups() -> [(peer: AuthorID, groups: Set<GroupID>)] {
        sessions.keys.sorted().compactMap { peer in sessions[peer].map { (peer, $0.scope.groups) } }
    }

    /// Posts that `peer` made came live from it (gossip or push) and were stored: their photos are asked of it at once.
    nonisolated func postsArrived(_ posts: [PostID], from peer: AuthorID) { photos.postsArrived(posts, from: peer) }

    /// Posts that `peer` made came live from it and are being stored: their photos are asked of it at once.
    nonisolated func photosArriving(_ photos: [MissingPhoto], from peer: AuthorID) {
        self.photos.photosArriving(photos, from: peer)
    }

    /// The store of the posts whose photos ``photosArriving(_:from:)`` handed over ended (committed or failed).
    nonisolated func photosStored(_ photos: [MissingPhoto], from peer: AuthorID) {
        self.photos.photosStored(photos, from: peer)
    }

    /// Records from a session were stored: gossip them on and look for photos.
    func didStore(from session: PeerSession, count: Int) async {
        emit(.recordsStored(from: session.peer, count: count))
        wakeGossip()
        await photos.poke()
    }

    // MARK: Follows and push

    /// Re-reads the followed posts from the store (`follow` and `unfollow` may run in another process) and tells
    /// every peer what changed.
    public func followsChanged() async {
        let current: Set<PostID>
        do {
            current = try await store.followedPosts()
        } catch {
            // Retried at the next change and by the once-a-second check in `run`.
            logger.failure("reading the followed posts failed", error)
            return
        }
        guard current != follows else { return }
        follows = current
        await advertiseInterest()
        await shareFollows()
    }

    /// For each connected peer, how many posts it asked to have pushed (for itself or for nodes beyond it).
    public func peerInterest() -> [AuthorID: Int] { interest.mapValues(\.count) }

    /// What each session open now has moved so far: the store's peer counters add a session's only when it ends,
    /// so `peers` adds these to show live figures.
    public func liveTraffic() async -> [AuthorID: SessionStats] {
        var traffic: [AuthorID: SessionStats] = [:]
        for (peer, session) in sessions { traffic[peer] = await session.currentStats() }
        return traffic
    }

    /// An INTEREST frame from a peer: applied in place, in time proportional to its entries. Telling the other
    /// peers is left to the relay in ``run()``, which coalesces changes (at most one advertisement per
    /// ``SyncConfiguration/interestRelayInterval``), so a peer that sends INTEREST fast costs the others nothing
    /// more than one that sends it slowly.
    func receivedInterest(from peer: AuthorID, replace: Bool, _ entries: [PostInterest]) throws(WireError) {
        var wanted = interest.removeValue(forKey: peer) ?? [:]
        var changed = false
        if replace {
            changed = !wanted.isEmpty || !entries.isEmpty
            wanted.removeAll()
        }
        for entry in entries {
            let old =
                entry.hops.map { wanted.updateValue($0, forKey: entry.post) } ?? wanted.removeValue(forKey: entry.post)
            changed = changed || old != entry.hops
        }
        guard wanted.count <= WireLimits.maxInterestPerPeer else {
            // The session ends; what was relayed of this peer's interest is withdrawn.
            interestWake.yield()
            throw WireError(
                .malformedFrame,
                "the peer asked for pushes on \(wanted.count) posts; the limit is \(WireLimits.maxInterestPerPeer)"
            )
        }
        interest[peer] = wanted
        if changed { interestWake.yield() }
    }

    /// What to tell `peer` we want pushed: our own follows (0 hops), and every other peer's interest one hop
    /// further, up to ``WireLimits/maxInterestHops``. Interest from `peer` itself is never echoed back to it.
    func advertisement(for peer: AuthorID) -> (wanted: [PostID: UInt8], version: UInt64) {
        interestVersion += 1
        return (computeAdvertisement(for: peer), interestVersion)
    }

    private func computeAdvertisement(for peer: AuthorID) -> [PostID: UInt8] {
        var wanted: [PostID: UInt8] = [:]
        for post in follows { wanted[post] = 0 }
        for (other, posts) in interest where other != peer {
            for (post, hops) in posts where hops < WireLimits.maxInterestHops {
                if let current = wanted[post], current <= hops + 1 { continue }
                wanted[post] = hops + 1
            }
        }
        return wanted
    }

    private func advertiseInterest() async {
        for (peer, session) in sessions {
            let (wanted, version) = advertisement(for: peer)
            await session.advertise(wanted, version: version)
        }
    }

    // MARK: Gossip

    /// Forwards records stored since the last look (by any path: a peer, this process, or another process such
    /// as the CLI) to every session whose peer does not hold them: pushed ahead of everything else when they
    /// concern a post the peer asked for, live gossip otherwise; never to the peer that sent them. Then tells
    /// `watch` what was stored.
    func gossipNewRecords() async {
        let scopes = sessions.values.map(\.scope)
        // Records whose store returned before this pass are read by it: their sources are forgotten once it ends.
        for scope in scopes { scope.arrivals.passBegins() }
        var stored = false
        while true {
            let records: [StoredRecord]
            do {
                records = try await store.records(after: gossipedThrough, limit: 1000)
            } catch {
                // Nothing is lost: the next wake (within a poll interval) reads from the same place again.
                logger.failure("reading new records failed", error)
                break
            }
            guard !records.isEmpty else {
                for scope in scopes { scope.arrivals.passEnded() }
                break
            }
            stored = true
            gossipedThrough = records.last!.rowid
            await gossip(records)
            if records.count < 1000 {
                for scope in scopes { scope.arrivals.passEnded() }
                break
            }
        }
        if stored { await emitNotifications() }
    }

    /// Sends one read of new records to every session (but not back to their source), and tells `watch`.
    private func gossip(_ records: [StoredRecord]) async {
        // A group, member or account record (the kind byte, §2.1) changes who may be sent what: read the groups
        // again before anything is gossiped.
        if records.contains(where: { $0.bytes.count > 5 && RecordHeader.changesMembership(kindCode: $0.bytes[5]) }) {
            await refreshMembership()
        }
        let wantsContents = !subscribers.isEmpty || interest.values.contains { !$0.isEmpty }
        // Stored records were verified before they were stored; one that no longer decodes is gossiped as bytes
        // but neither pushed nor shown as an event.
        let contents = wantsContents ? records.map { try? SignedRecord(bytes: $0.bytes) } : []
        let trees = treeChildren(of: records)
        let ids = records.map(\.id)
        for (peer, session) in sessions {
            // Never back to the peer that sent them, whether or not its session has counted them yet (§7.8.8).
            let theirs = session.scope.arrivals.sent(among: ids)
            // Tree push: to a neighbour that is not the record's child in its writer's tree, only a HAVE.
            var eager: [(StoredRecord, SignedRecord?)] = []
            var lazy: [StoredRecord] = []
            for (index, record) in records.enumerated() where !theirs.contains(record.id) {
                if neighbours.contains(peer), let children = trees[index], !children.contains(peer) {
                    lazy.append(record)
                } else {
                    eager.append((record, contents.isEmpty ? nil : contents[index]))
                }
            }
            if !lazy.isEmpty { await session.announce(lazy) }
            if !eager.isEmpty { await send(eager, to: session) }
        }
        if !subscribers.isEmpty {
            for (record, parsed) in zip(records, contents) {
                if let content = parsed?.content { emitStored(content, id: record.id) }
            }
        }
    }

    /// Sends records eagerly to a session: pushed when they concern a post its peer asked for, gossiped otherwise.
    private func send(_ eager: [(StoredRecord, SignedRecord?)], to session: PeerSession) async {
        guard let wanted = interest[session.peer], !wanted.isEmpty else {
            await session.gossip(eager.map(\.0))
            return
        }
        var pushes: [StoredRecord] = []
        var rest: [StoredRecord] = []
        for (record, parsed) in eager {
            if let parsed, parsed.header.references.posts.contains(where: { wanted[$0] != nil }) {
                pushes.append(record)
            } else {
                rest.append(record)
            }
        }
        if !pushes.isEmpty { await session.push(pushes) }
        if !rest.isEmpty { await session.gossip(rest) }
    }

    /// Whether `peer` is one of this node's neighbours in the overlay (tree push prunes only such links).
    func isNeighbour(_ peer: AuthorID) -> Bool { neighbours.contains(peer) }

    /// Whether `peer` is the parent, in the broadcast tree of their writer's node, of records by these authors.
    func isTreeParent(_ peer: AuthorID, ofRecordsBy authors: [AuthorID]) -> Bool {
        guard let overlay, configuration.maxPeers > 0, !authors.isEmpty else { return false }
        return Set(authors).allSatisfy { author in
            let root = membership?.logs[author].map { AuthorID(unchecked: $0.node.bytes) } ?? author
            return overlay.treeParent(root: root) == peer
        }
    }

    /// For each record, the neighbours that are its children in the tree of the node that wrote it (the node of its
    /// log, by the groups' member records; or its author, when that is a node); nil: no tree, every neighbour.
    private func treeChildren(of records: [StoredRecord]) -> [Set<AuthorID>?] {
        guard let overlay, configuration.maxPeers > 0 else { return records.map { _ in nil } }
        var byRoot: [AuthorID: Set<AuthorID>?] = [:]
        return records.map { record in
            let root = membership?.logs[record.author].map { AuthorID(unchecked: $0.node.bytes) } ?? record.author
            if let known = byRoot[root] { return known }
            let children = overlay.treeChildren(root: root)
            byRoot[root] = children
            return children
        }
    }

    private func emitStored(_ content: RecordContent, id: RecordID) {
        switch content.body {
        case .post(let caption, _, _):
            emit(.postAdded(PostID(unchecked: id.bytes), author: content.author, caption: caption))
        case .comment(let post, let text):
            emit(.commentAdded(CommentID(unchecked: id.bytes), post: post, author: content.author, text: text))
        case .edit(let post, let change):
            emit(.postEdited(post, author: content.author, caption: change.caption))
        case .delete(let targets):
            emit(.deleted(targets, author: content.author))
        case .opaque:
            guard let reaction = Reaction(content.body) else { return }
            emit(.reacted(post: reaction.post, target: reaction.target, author: content.author, emoji: reaction.emoji))
        case .profile, .group, .member:
            break
        }
    }

    private func emitNotifications() async {
        while true {
            let fresh: [NotificationSummary]
            do {
                fresh = try await store.notifications(after: notifiedThrough)
            } catch {
                // Emitted at the next look, from the same place.
                logger.failure("reading new notifications failed", error)
                return
            }
            guard let last = fresh.last else { return }
            notifiedThrough = last.id
            for notification in fresh { emit(.notification(notification)) }
            if fresh.count < 1000 { return }
        }
    }

    /// Where gossip and notifications start: the store as it is now. A failed read is logged and retried each
    /// second (starting from zero would send every record again); nil when cancelled first.
    private func startingPoint() async -> (Int64, Int64, Set<PostID>)? {
        while !Task.isCancelled {
            do {
                return (
                    try await store.lastRecordRowid(), try await store.lastNotificationID(),
                    try await store.followedPosts()
                )
            } catch {
                logger.failure("reading the store at start failed; retrying", error)
                try? await Task.sleep(for: .seconds(1))
            }
        }
        return nil
    }

    func wakeGossip() { wake.yield() }

    /// Records were just stored by someone else on this store (the CLI, the HTTP API): send them now.
    public func recordsWritten() { wake.yield() }

    /// Sends the records written here since the last pass to the sessions now, and returns once they are queued.
    public func flushNewRecords() async { await gossipNewRecords() }

    /// Runs the background loops (gossip, photo fetching, periodic anti-entropy) until cancelled.
    public func run() async {
        await photos.attach(self)
        guard let start = await startingPoint() else { return }
        await refreshMembership()
        (gossipedThrough, notifiedThrough, follows) = start
        await withTaskGroup(of: Void.self) { group in
            // Interest changes, relayed to every peer: at once, then at most once per interval.
            group.addTask { [configuration] in
                for await _ in self.interestWakes {
                    await self.advertiseInterest()
                    try? await Task.sleep(for: configuration.interestRelayInterval)
                }
            }
            // Records written by other processes (the CLI) are noticed within one poll interval.
            // The store is read only when its write-ahead log changed (a stat, no query), and once a second anyway:
            // fifty idle nodes on one machine cost little.
            group.addTask { [configuration, wake, store] in
                var last = store.writeStamp()
                var quiet = ContinuousClock.now
                while !Task.isCancelled {
                    try? await Task.sleep(for: configuration.pollInterval)
                    let stamp = store.writeStamp()
                    if stamp == nil || stamp != last || ContinuousClock.now - quiet >= .seconds(1) {
                        last = stamp
                        quiet = ContinuousClock.now
                        wake.yield()
                    }
                }
            }
            // Follows changed by another process are normally announced on the control socket; this catches
            // the rest.
            group.addTask {
                while !Task.isCancelled {
                    try? await Task.sleep(for: .seconds(1))
                    await self.followsChanged()
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
                    guard let number = await session.startRound() else { return false }
                    return await session.waitForRound(number, timeout: timeout)
                }
            }
            var completed = 0
            for await done in group where done { completed += 1 }
            return completed
        }
    }
}
