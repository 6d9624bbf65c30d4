import ContinuumCore
import ContinuumMedia
import ContinuumSession
import ContinuumStore
import ContinuumWire
import Foundation
import Logging
import Testing

@testable import ContinuumSync

/// A node in memory for these tests: a sync engine over its own ``MemorySyncStorage``.
///
/// The engine's background loops (``SyncEngine/run()``) are not started: they run on timers (the store poll, the
/// follows check). What they would do is done here when it is due: gossip starts from the store as it is when the
/// node is made (as `run` reads its starting point), and every batch a session stores is gossiped on as soon as it
/// commits (what the store poll's wake does).
private struct MemoryNode {
    let identity: NodeIdentity
    let store: MemorySyncStorage
    let engine: SyncEngine

    /// A node with `seed`'s identity, the membership `view`, and `held` in its store from the start.
    static func make(
        seed: UInt8,
        view: MembershipView,
        held: [VerifiedRecord] = [],
        maxPeers: Int = 8,
        treeRepairDelay: Duration = .milliseconds(200),
        thumbnails: ThumbnailService? = nil
    ) async throws -> MemoryNode {
        let identity = try SyncFixtures.identity(seed)
        let store = MemorySyncStorage(view: view)
        var configuration = SyncConfiguration()
        // No periodic rounds: what arrives after the first round comes by the live path.
        configuration.antiEntropyInterval = nil
        configuration.maxPeers = maxPeers
        configuration.treeRepairDelay = treeRepairDelay
        var logger = Logger(label: "node-\(seed)")
        logger.logLevel = .notice
        let engine = SyncEngine(
            store: store,
            identity: identity,
            configuration: configuration,
            logger: logger,
            thumbnails: thumbnails
        )
        let node = MemoryNode(identity: identity, store: store, engine: engine)
        await node.hold(held)
        await engine.gossipNewRecords()
        await store.setAfterCommit { await engine.gossipNewRecords() }
        return node
    }

    /// Starts this node's photo fetcher (its loop runs until the task is cancelled).
    func startFetcher() async -> Task<Void, Never> {
        await engine.photos.attach(engine)
        return Task { await engine.photos.run() }
    }

    /// The ids of every record held.
    func held() async -> Set<RecordID> { Set(await store.records(after: 0, limit: .max).map(\.id)) }

    /// Stores `records` as if written here (the CLI, the HTTP API), then tells the engine, as the store poll would.
    func write(_ records: [VerifiedRecord]) async {
        await hold(records)
        await engine.gossipNewRecords()
    }

    private func hold(_ records: [VerifiedRecord]) async {
        for record in records {
            let header = record.header
            await store.hold(record.bytes, id: record.id, author: header.author, sequence: header.sequence)
        }
    }
}

/// Two and three sync engines joined in memory (``InMemoryLink``), each over its own store: a whole session from its
/// opening, the live path, the groups a session shares, pushes to a follower, and the broadcast tree.
@Suite("In-process sync: engines joined in memory")
struct InProcessSyncTests {
    /// A closed group founded by `founder`'s log, with `members` (node identities, each with its own log).
    private static func view(
        _ group: GroupID,
        founder: NodeIdentity,
        members: [NodeIdentity],
        also extra: [AuthorID: MembershipView.Log] = [:],
        extraGroups: [GroupID: MembershipView.Group] = [:]
    ) -> MembershipView {
        var logs = extra
        for member in members {
            logs[member.author] = .init(
                group: group,
                node: member.node,
                admin: member.author == founder.author,
                removedThrough: nil
            )
        }
        var groups = extraGroups
        groups[group] = .init(id: group, name: "g", open: false, network: false, log: founder.author)
        return MembershipView(groups: groups, logs: logs)
    }

    @Test("full sync: each store ends with both logs exactly, and both clocks agree")
    func fullSync() async throws {
        let (one, two) = (try SyncFixtures.identity(1), try SyncFixtures.identity(2))
        let group = GroupID(founder: one.author)
        let view = Self.view(group, founder: one, members: [one, two])
        let ones = try SyncFixtures.profileLog(of: one, 5)
        let twos = try SyncFixtures.profileLog(of: two, 3)
        let a = try await MemoryNode.make(seed: 1, view: view, held: ones)
        let b = try await MemoryNode.make(seed: 2, view: view, held: twos)
        let (aEvents, bEvents) = (await a.engine.events(), await b.engine.events())

        let link = try await InMemoryLink.connect(a.engine, to: b.engine, sharing: [group])
        #expect(await link.opened(), "a first round did not finish")
        let both = Set(ones.map(\.id) + twos.map(\.id))
        try await SyncFixtures.waitUntil("A holds both logs", aEvents) { await a.held() == both }
        try await SyncFixtures.waitUntil("B holds both logs", bEvents) { await b.held() == both }

        #expect(await a.held().count == 8)
        let expected = VectorClock([one.author: 5, two.author: 3])
        #expect(await a.store.clock() == expected)
        #expect(await b.store.clock() == expected)
        // Each record crossed once, in a round (nothing was gossiped live).
        #expect(Set(link.records(receivedBy: b.engine, live: false)) == Set(ones.map(\.bytes)))
        #expect(Set(link.records(receivedBy: a.engine, live: false)) == Set(twos.map(\.bytes)))
        #expect(link.records(receivedBy: b.engine).count == 5)
        #expect(link.records(receivedBy: a.engine).count == 3)
        await link.close()
        #expect(await a.engine.connectedPeers().isEmpty)
        #expect(await b.engine.connectedPeers().isEmpty)
    }

    @Test("live: a record written on A after the sync reaches B as live gossip")
    func live() async throws {
        let (one, two) = (try SyncFixtures.identity(1), try SyncFixtures.identity(2))
        let group = GroupID(founder: one.author)
        let view = Self.view(group, founder: one, members: [one, two])
        let ones = try SyncFixtures.profileLog(of: one, 4)
        let a = try await MemoryNode.make(seed: 1, view: view, held: Array(ones.prefix(3)))
        let b = try await MemoryNode.make(seed: 2, view: view)
        let bEvents = await b.engine.events()
        let link = try await InMemoryLink.connect(a.engine, to: b.engine, sharing: [group])
        let first = Set(ones.prefix(3).map(\.id))
        try await SyncFixtures.waitUntil("B holds A's first three", bEvents) { await b.held() == first }
        #expect(await link.opened(), "a first round did not finish")

        await a.write([ones[3]])
        try await SyncFixtures.waitUntil("B holds A's fourth", bEvents) { await b.held() == Set(ones.map(\.id)) }
        #expect(link.records(receivedBy: b.engine, live: true) == [ones[3].bytes])
        #expect(await b.store.clock() == VectorClock([one.author: 4]))
        await link.close()
    }

    @Test("held back: a record that came live before its log was known here reaches B once it is")
    func heldBackUntilKnown() async throws {
        // A knows a newcomer as a member; B does not yet (its member record is on its way, say by another peer).
        let (one, two, newcomer) = (
            try SyncFixtures.identity(1), try SyncFixtures.identity(2), try SyncFixtures.identity(3)
        )
        let group = GroupID(founder: one.author)
        let before = Self.view(group, founder: one, members: [one, two])
        let after = Self.view(group, founder: one, members: [one, two, newcomer])
        let a = try await MemoryNode.make(seed: 1, view: after)
        let b = try await MemoryNode.make(seed: 2, view: before)
        let bEvents = await b.engine.events()
        let link = try await InMemoryLink.connect(a.engine, to: b.engine, sharing: [group])
        #expect(await link.opened(), "a first round did not finish")

        // Gossiped live to B, which holds it back, asks for it again and holds it back again. The newcomer's second
        // record, ahead of what B knows A holds of that log (as a joiner's first post came before its group's records
        // it had not yet): nothing but a REQUEST of its position brings it again, as A sent it down this link.
        let record = try SyncFixtures.profileLog(of: newcomer, 2)[1]
        let toB = link.deliveries(to: b.engine)
        await a.write([record])
        try await SyncFixtures.waitUntil("B was sent the record twice", toB) {
            link.records(receivedBy: b.engine).filter { $0 == record.bytes }.count >= 2
        }
        #expect(await b.held().isEmpty, "B stored a record of a log it does not know")

        // B learns the newcomer: the record comes again, by a REQUEST (A sent it down this link already).
        await b.store.setView(after)
        await b.engine.refreshMembership()
        try await SyncFixtures.waitUntil("B holds the newcomer's record", bEvents) { await b.held() == [record.id] }
        #expect(link.records(receivedBy: b.engine, live: true) == [record.bytes])
        await link.close()
    }

    @Test("scope: records of a group B is not in never reach B; those of the shared group do")
    func scope() async throws {
        let (one, two, secret) = (
            try SyncFixtures.identity(1), try SyncFixtures.identity(2), try SyncFixtures.identity(9)
        )
        let shared = GroupID(founder: one.author)
        let hidden = GroupID(founder: secret.author)
        // A knows both groups: its log `one` in the shared one, its log `secret` in a group of its own.
        let aView = Self.view(
            shared,
            founder: one,
            members: [one, two],
            also: [secret.author: .init(group: hidden, node: one.node, admin: true, removedThrough: nil)],
            extraGroups: [hidden: .init(id: hidden, name: "h", open: false, network: false, log: secret.author)]
        )
        let bView = Self.view(shared, founder: one, members: [one, two])
        let ones = try SyncFixtures.profileLog(of: one, 4)
        let secrets = try SyncFixtures.profileLog(of: secret, 4)
        let a = try await MemoryNode.make(seed: 1, view: aView, held: Array(ones.prefix(3)) + secrets.prefix(3))
        let b = try await MemoryNode.make(seed: 2, view: bView)
        let bEvents = await b.engine.events()
        let link = try await InMemoryLink.connect(a.engine, to: b.engine, sharing: [shared])
        try await SyncFixtures.waitUntil("B holds the shared log", bEvents) {
            await b.held() == Set(ones.prefix(3).map(\.id))
        }
        #expect(await link.opened(), "a first round did not finish")

        // Live: one record of each group, the hidden one first.
        await a.write([secrets[3], ones[3]])
        try await SyncFixtures.waitUntil("B holds the shared log's fourth", bEvents) {
            await b.held() == Set(ones.map(\.id))
        }
        let received = Set(link.records(receivedBy: b.engine))
        #expect(received == Set(ones.map(\.bytes)), "B was sent something other than the shared log")
        #expect(received.isDisjoint(with: secrets.map(\.bytes)), "a record of the hidden group was sent to B")
        #expect(await b.store.clock() == VectorClock([one.author: 4]))
        await link.close()
    }

    @Test("push: a comment on a post B follows goes to B as PUSH once B's interest has reached A")
    func pushToFollower() async throws {
        let (one, two) = (try SyncFixtures.identity(1), try SyncFixtures.identity(2))
        let group = GroupID(founder: one.author)
        let view = Self.view(group, founder: one, members: [one, two])
        let a = try await MemoryNode.make(seed: 1, view: view)
        let b = try await MemoryNode.make(seed: 2, view: view)
        let bEvents = await b.engine.events()
        let link = try await InMemoryLink.connect(a.engine, to: b.engine, sharing: [group])
        let toA = link.deliveries(to: a.engine)
        #expect(await link.opened(), "a first round did not finish")

        // B follows a post (not held by either: its group is unknown, so the interest is kept on both sides).
        let post = PostID(unchecked: Data(repeating: 7, count: 32))
        await b.store.follow(post)
        await b.engine.followsChanged()
        try await SyncFixtures.waitUntil("A knows B's interest", toA) {
            await a.engine.peerInterest() == [two.author: 1]
        }

        let comment = try one.sign(
            RecordContent(
                author: one.author,
                sequence: 1,
                previous: nil,
                createdAt: Timestamp(milliseconds: 1_700_000_000_001),
                body: .comment(post: post, text: "first")
            )
        )
        await a.write([comment])
        try await SyncFixtures.waitUntil("B holds the comment", bEvents) { await b.held() == [comment.id] }
        #expect(link.messages(receivedBy: b.engine).contains(.push([comment.bytes])), "the comment was not pushed")
        #expect(link.records(receivedBy: b.engine, push: false).isEmpty, "the comment came as RECORDS too")
        await link.close()
    }

    @Test("tree push: a record goes eagerly to its child in the writer's tree, which relays it; the other gets HAVE")
    func treePush() async throws {
        let ids = try [1, 2, 3].map { try SyncFixtures.identity(UInt8($0)) }
        let group = GroupID(founder: ids[0].author)
        let view = Self.view(group, founder: ids[0], members: ids)
        var nodes: [MemoryNode] = []
        // The repair timer is out of the way (it has tests of its own, on a clock they set: TreePushTests): with
        // 200 ms, a loaded machine let node 2 pull the record from node 1 before node 3's relay came, and the test
        // would have judged the tree by the timer.
        for seed in UInt8(1)...3 {
            nodes.append(try await MemoryNode.make(seed: seed, view: view, maxPeers: 2, treeRepairDelay: .seconds(60)))
        }
        // The ring of these seeds, by author id, is 2, 1, 3 (written by hand, checked here): the tree rooted at
        // node 1 is 1 → 3 → 2, so node 1 sends its records to 3 and only announces them to 2, and 3 relays them.
        try #require(ids.map(\.author).sorted() == [ids[1].author, ids[0].author, ids[2].author])
        for (index, node) in nodes.enumerated() {
            var peers = PeerView(own: ids[index].author, maxPeers: 2)
            for other in ids where other.author != ids[index].author { peers.add(other.author) }
            await node.engine.setView(peers)
        }
        let (one, two, three) = (nodes[0], nodes[1], nodes[2])
        let twoToOne = try await InMemoryLink.connect(two.engine, to: one.engine, sharing: [group])
        let oneToThree = try await InMemoryLink.connect(one.engine, to: three.engine, sharing: [group])
        let twoToThree = try await InMemoryLink.connect(two.engine, to: three.engine, sharing: [group])
        // The opening rounds are over before the record is written: it can come only by the live path.
        for link in [twoToOne, oneToThree, twoToThree] { #expect(await link.opened()) }
        let events = await two.engine.events()
        let haves = twoToOne.deliveries(to: two.engine)

        let record = try SyncFixtures.profileLog(of: ids[0], 1)[0]
        await one.write([record])
        try await SyncFixtures.waitUntil("node 2 holds the record", events) { await two.held() == [record.id] }
        #expect(await three.held() == [record.id])
        #expect(oneToThree.records(receivedBy: three.engine) == [record.bytes], "node 1 did not send it to its child")
        #expect(twoToThree.records(receivedBy: two.engine) == [record.bytes], "node 3 did not relay it")
        #expect(twoToOne.records(receivedBy: two.engine).isEmpty, "node 1 sent it to a node not its child")
        // The HAVE was queued before the write returned; no engine event follows it, so its delivery is awaited.
        let have = WireMessage.have([LogRange(author: ids[0].author, range: 1...1)])
        try await SyncFixtures.waitUntil("node 1 announced it to node 2", haves) {
            twoToOne.messages(receivedBy: two.engine).contains(have)
        }
        for link in [twoToOne, oneToThree, twoToThree] { await link.close() }
    }

    /// Two nodes of one group for the photo tests: A's first `records` profile records (A holds the first, a post's
    /// stand-in for the photos' `MissingPhoto`s), A and B.
    private static func photoNodes(
        records: UInt64
    ) async throws -> (group: GroupID, records: [VerifiedRecord], a: MemoryNode, b: MemoryNode) {
        let (one, two) = (try SyncFixtures.identity(1), try SyncFixtures.identity(2))
        let group = GroupID(founder: one.author)
        let view = Self.view(group, founder: one, members: [one, two])
        let ones = try SyncFixtures.profileLog(of: one, records)
        let a = try await MemoryNode.make(seed: 1, view: view, held: [ones[0]])
        return (group, ones, a, try await MemoryNode.make(seed: 2, view: view))
    }

    /// A post of `one`'s, the next record of its log after `previous` (its first), showing `photo`.
    private static func newPost(
        by one: NodeIdentity,
        after previous: VerifiedRecord,
        showing photo: PhotoReference
    ) throws -> VerifiedRecord {
        try one.sign(
            RecordContent(
                author: one.author,
                sequence: 2,
                previous: previous.id,
                createdAt: Timestamp(milliseconds: 1_700_000_000_002),
                body: .post(caption: "new", photo: photo, location: nil)
            )
        )
    }

    @Test("a photo's commit does not hold up its session: a record sent after the photo is stored while it waits")
    func photoCommittedBesideTheSession() async throws {
        let (group, ones, a, b) = try await Self.photoNodes(records: 2)
        // Temporary files: one left behind by a failure to remove them costs nothing but space.
        defer { for store in [a.store, b.store] { try? store.removeFiles() } }
        // Over 64 KiB: a transfer of its own (PHOTO_WANT, two chunks, PHOTO_END), not a batch of small photos.
        let bytes = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let hash = try await a.store.holdPhoto(bytes)
        await b.store.lack(
            MissingPhoto(hash: hash, bytes: UInt64(bytes.count), post: PostID(ones[0].id), groups: [group])
        )
        // B's disk is slow: each commit of fetched photos waits until the test opens the gate.
        let gate = Gate()
        // On every way out, a failure included: the committer waiting at the gate goes on, and the test ends.
        defer { Task { await gate.open() } }
        await b.store.setBeforePhotoCommit { hashes in await gate.pass(hashes) }
        let bEvents = await b.engine.events()

        let link = try await InMemoryLink.connect(a.engine, to: b.engine, sharing: [group])
        #expect(await link.opened(), "a first round did not finish")
        let fetcher = await b.startFetcher()
        defer { fetcher.cancel() }
        try await SyncFixtures.waitUntil("B's commit of the photo began", gate.arrivals) {
            await gate.passed == [[hash]]
        }
        // The commit is held. A writes a record; the session that brought the photo reads it and B stores it.
        await a.write([ones[1]])
        try await SyncFixtures.waitUntil("B stored A's new record", bEvents) {
            await b.held().contains(ones[1].id)
        }
        #expect(try await b.store.photoBytes(hash) == nil, "the photo is not committed yet")
        await gate.open()
        try await SyncFixtures.waitUntil("B holds the photo", bEvents) {
            // A file that cannot be read yet counts as not there; the bytes are compared below, with the error.
            (try? await b.store.photoBytes(hash)) != nil
        }
        #expect(try await b.store.photoBytes(hash) == bytes)
        await link.close()
    }

    @Test("a live post's photo is asked of its maker at once: while the post is being stored, and the look is held")
    func arrivedPostFetchesBesideTheLook() async throws {
        let (group, ones, a, b) = try await Self.photoNodes(records: 1)
        // Temporary files: one left behind by a failure to remove them costs nothing but space.
        defer { for store in [a.store, b.store] { try? store.removeFiles() } }
        // Over 64 KiB: a transfer of its own (PHOTO_WANT, chunks, PHOTO_END).
        let bytes = (0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 11) }
        let hash = try await a.store.holdPhoto(bytes)
        let one = try SyncFixtures.identity(1)
        let photo = PhotoReference(sha256: hash, byteCount: UInt64(bytes.count), mediaType: .jpeg, width: 4, height: 3)
        let post = try Self.newPost(by: one, after: ones[0], showing: photo)
        // B's looks are held, as a look through a large store takes long: the photo cannot come through one.
        let gate = Gate()
        // On every way out, a failure included: the look waiting at the gate goes on, and the test ends.
        defer { Task { await gate.open() } }
        await b.store.setBeforeLook { await gate.pass([]) }
        let bEvents = await b.engine.events()
        let link = try await InMemoryLink.connect(a.engine, to: b.engine, sharing: [group])
        #expect(await link.opened(), "a first round did not finish")
        let fetcher = await b.startFetcher()
        defer { fetcher.cancel() }
        try await SyncFixtures.waitUntil("B's first look is held", gate.arrivals) { await gate.passed.count >= 1 }
        // B's disk is slow: the store of the post waits until the test opens this gate (any other batch goes in).
        let stores = Gate()
        // On every way out, a failure included: the store waiting at the gate goes on, and the test ends.
        defer { Task { await stores.open() } }
        await b.store.setBeforeIngest { ids in if ids.contains(post.id) { await stores.pass([]) } }

        await a.write([post])
        try await SyncFixtures.waitUntil("B's store of the post began", stores.arrivals) {
            await stores.passed.count == 1
        }
        // The default wait (90 s): a parallel test run once starved this process for about 30 s.
        try await SyncFixtures.waitUntil("A was asked for the photo", link.deliveries(to: a.engine)) {
            link.messages(receivedBy: a.engine).contains(.photoWant(hash, offset: 0))
        }
        #expect(await !b.held().contains(post.id), "the post was stored before its photo was asked for")
        // B's watchdog asks every second whether a live post shows the photo: none does while its post is held, and
        // the photo is not taken for one erased while it came. It asks again only while the transfer is under way,
        // so a second question means the first look is over and kept it.
        try await SyncFixtures.waitUntil("B's watchdog looked at the photo twice", b.store.shownChecked) {
            await b.store.shownAsked[hash, default: 0] >= 2
        }
        #expect(await b.engine.photos.isFetching(hash), "the transfer was dropped")
        await stores.open()
        try await SyncFixtures.waitUntil("B holds the new post's photo", bEvents) {
            // A file that cannot be read yet counts as not there; the bytes are compared below, with the error.
            (try? await b.store.photoBytes(hash)) != nil
        }
        #expect(try await b.store.photoBytes(hash) == bytes)
        #expect(link.records(receivedBy: b.engine, live: true) == [post.bytes])
        #expect(await b.store.looks.asked == 0, "a look ended: the photo may have come through it")
        #expect(await b.store.arrivalLookups == 0, "the photo was read from the store, after the post's store")
        await link.close()
    }

    @Test("an arrived post's thumbnail is asked of the node that made it, not of another peer that shares the group")
    func arrivedPostThumbnailAskedOfItsMaker() async throws {
        let (one, two, three) = (
            try SyncFixtures.identity(1), try SyncFixtures.identity(2), try SyncFixtures.identity(3)
        )
        let group = GroupID(founder: one.author)
        let view = Self.view(group, founder: one, members: [one, two, three])
        let ones = try SyncFixtures.profileLog(of: one, 1)
        // Over 64 KiB (a THUMB_WANT is due), and one that B's choice among its peers would ask of C, not A: the
        // photo's bytes are varied until it is (the choice mixes the photo's hash with each peer's id).
        var salt: UInt8 = 0
        var bytes: [UInt8] = []
        repeat {
            salt &+= 1
            bytes = (0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ Int(salt)) }
        } while PhotoFetcher.mix(AssetHash.of(Data(bytes)).bytes, three.author.bytes)
            > PhotoFetcher.mix(AssetHash.of(Data(bytes)).bytes, one.author.bytes)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("thumbs-\(UUID().uuidString)")
        // Best effort: a temporary directory left behind is harmless.
        defer { try? FileManager.default.removeItem(at: directory) }
        let service = ThumbnailService(
            assets: AssetStore(root: directory),
            logger: Logger(label: "thumbnails"),
            isShown: { _ in true }
        )
        let a = try await MemoryNode.make(seed: 1, view: view, held: [ones[0]])
        let b = try await MemoryNode.make(seed: 2, view: view, thumbnails: service)
        let c = try await MemoryNode.make(seed: 3, view: view)
        // Temporary files: one left behind by a failure to remove them costs nothing but space.
        defer { for store in [a.store, b.store, c.store] { try? store.removeFiles() } }
        let hash = try await a.store.holdPhoto(bytes)
        let photo = PhotoReference(sha256: hash, byteCount: UInt64(bytes.count), mediaType: .jpeg, width: 4, height: 3)
        let post = try Self.newPost(by: one, after: ones[0], showing: photo)
        // B's looks are held, so that only the arrival asks for the photo and its thumbnail.
        let gate = Gate()
        // On every way out, a failure included: the look waiting at the gate goes on, and the test ends.
        defer { Task { await gate.open() } }
        await b.store.setBeforeLook { await gate.pass([]) }
        let bEvents = await b.engine.events()
        let fromA = try await InMemoryLink.connect(a.engine, to: b.engine, sharing: [group])
        let fromC = try await InMemoryLink.connect(c.engine, to: b.engine, sharing: [group])
        #expect(await fromA.opened(), "A and B: a first round did not finish")
        #expect(await fromC.opened(), "C and B: a first round did not finish")
        let fetcher = await b.startFetcher()
        defer { fetcher.cancel() }
        try await SyncFixtures.waitUntil("B's first look is held", gate.arrivals) { await gate.passed.count >= 1 }

        await a.write([post])
        try await SyncFixtures.waitUntil("B holds the new post's photo", bEvents) {
            (try? await b.store.photoBytes(hash)) != nil
        }
        let asked: (InMemoryLink, MemoryNode) -> Int = { link, node in
            link.messages(receivedBy: node.engine).filter { message in
                guard case .thumbWant(let wanted) = message else { return false }
                return wanted == hash
            }.count
        }
        #expect(asked(fromA, a) == 1, "the maker was not asked for the thumbnail")
        #expect(
            asked(fromC, c) == 0,
            "another peer was asked for the thumbnail of a post that just came from its maker"
        )
        await fromA.close()
        await fromC.close()
    }

    @Test("a photo's progress is told at most every 100 ms, not for each of its 256 KiB chunks")
    func progressToldAtMostEvery100ms() async throws {
        let (group, ones, a, b) = try await Self.photoNodes(records: 1)
        // Temporary files: one left behind by a failure to remove them costs nothing but space.
        defer { for store in [a.store, b.store] { try? store.removeFiles() } }
        // 2 MiB: eight chunks.
        let bytes = (0..<(2 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let hash = try await a.store.holdPhoto(bytes)
        await b.store.lack(
            MissingPhoto(hash: hash, bytes: UInt64(bytes.count), post: PostID(ones[0].id), groups: [group])
        )
        let bEvents = await b.engine.events()
        let told = await b.engine.events()
        let link = try await InMemoryLink.connect(a.engine, to: b.engine, sharing: [group])
        #expect(await link.opened(), "a first round did not finish")
        let started = ContinuousClock.now
        let fetcher = await b.startFetcher()
        defer { fetcher.cancel() }
        try await SyncFixtures.waitUntil("B holds the photo", bEvents) {
            // A file that cannot be read yet counts as not there; the bytes are compared below, with the error.
            (try? await b.store.photoBytes(hash)) != nil
        }
        let elapsed = ContinuousClock.now - started
        #expect(try await b.store.photoBytes(hash) == bytes)
        // The events until the photo arrived, all buffered by now.
        var progress = 0
        events: for await event in told {
            switch event {
            case .photoProgress(hash, _, _): progress += 1
            case .photoArrived(hash): break events
            default: continue
            }
        }
        #expect(
            progress <= Int(elapsed / .milliseconds(100)),
            "\(progress) progress events in \(elapsed) (one every 100 ms at most)"
        )
        await link.close()
    }

    @Test("a look that finds the store unchanged keeps its list; one after a change reads it, and fetches what is new")
    func unchangedLooksKeepTheirList() async throws {
        let (group, ones, a, b) = try await Self.photoNodes(records: 1)
        // Temporary files: one left behind by a failure to remove them costs nothing but space.
        defer { for store in [a.store, b.store] { try? store.removeFiles() } }
        let post = PostID(ones[0].id)
        // A photo that no node has: B asks A, which cannot send it, and goes on looking.
        await b.store.lack(
            MissingPhoto(hash: AssetHash.of(Data("nowhere".utf8)), bytes: 90_000, post: post, groups: [group])
        )
        let link = try await InMemoryLink.connect(a.engine, to: b.engine, sharing: [group])
        #expect(await link.opened(), "a first round did not finish")
        let fetcher = await b.startFetcher()
        defer { fetcher.cancel() }
        try await SyncFixtures.waitUntil("B's fetcher looked", b.store.looked) { await b.store.looks.asked >= 1 }
        // Three more looks, each woken here, with nothing changed in B's store.
        for _ in 0..<3 {
            let before = await b.store.looks.asked
            await b.engine.photos.poke()
            try await SyncFixtures.waitUntil("B's fetcher looked again", b.store.looked) {
                await b.store.looks.asked > before
            }
        }
        #expect(await b.store.looks.read == 1, "a look read the unchanged list again")

        // A photo A has, missing on B now: the next look reads the list and fetches it.
        let bytes = (0..<80_000).map { UInt8(truncatingIfNeeded: $0 &* 13) }
        let hash = try await a.store.holdPhoto(bytes)
        await b.store.lack(MissingPhoto(hash: hash, bytes: UInt64(bytes.count), post: post, groups: [group]))
        await b.engine.photos.poke()
        try await SyncFixtures.waitUntil("B holds the new photo", b.store.looked) {
            // A file that cannot be read yet counts as not there; the bytes are compared below, with the error.
            (try? await b.store.photoBytes(hash)) != nil
        }
        #expect(try await b.store.photoBytes(hash) == bytes)
        #expect(await b.store.looks.read >= 2)
        await link.close()
    }
}

/// Holds every caller of ``pass(_:)`` until ``open()``, and tells who came (``arrivals``).
extension PhotoFetcher {
    /// Whether a transfer of the photo is under way.
    func isFetching(_ hash: AssetHash) -> Bool { transfers[hash] != nil }
}

private actor Gate {
    private var isOpen = false
    private var waiting: [CheckedContinuation<Void, Never>] = []
    /// What each caller brought, in order.
    private(set) var passed: [[AssetHash]] = []
    nonisolated let arrivals: AsyncStream<[AssetHash]>
    private let arrived: AsyncStream<[AssetHash]>.Continuation

    init() { (arrivals, arrived) = AsyncStream.makeStream() }

    func pass(_ hashes: [AssetHash]) async {
        passed.append(hashes)
        arrived.yield(hashes)
        guard !isOpen else { return }
        await withCheckedContinuation { waiting.append($0) }
    }

    func open() {
        isOpen = true
        for waiter in waiting { waiter.resume() }
        waiting = []
    }
}
