import ContinuumCore
import ContinuumStore
import ContinuumTestSupport
import Foundation
import Testing

/// Membership is a function of the records (PROTOCOL.md §5.1, Appendix A 19 and 27): three nodes given the same
/// membership and content records in random orders and random batchings derive the same members and show the same
/// feed, and that is the one §5.1 gives. The orders are those a node can receive: a log's records come after the
/// record that places the log (its group record, or a member record adding it), as the sync layer holds them back
/// until then (§7.8.6); all else is random: member records among content, removals before the records they keep, a
/// post after its comments and reactions.
@Suite("Membership and content: 1,002 random orders and batchings over three nodes give the same members and feed")
struct MembershipPropertyTests {
    /// A closed group, Family, founded by F (author 0). F makes A (1) an admin, adds M (2) and O (4), posts, removes O
    /// keeping O's first record, and removes the admin A keeping A's first two records. A adds N (3), posts, and then,
    /// after what F's removal keeps, adds P (5). M and N comment; N reacts. Every log in order of sequence.
    struct History {
        var factory = RecordFactory(authorCount: 8, seed: 61)
        var records: [VerifiedRecord] { factory.records }
        var group: GroupID { GroupID(founder: factory.authors[0].author) }
        let posts: [String: PostID]

        init() {
            var factory = RecordFactory(authorCount: 8, seed: 61)
            let group = GroupID(founder: factory.authors[0].author)
            func member(_ action: MemberAction, _ index: Int, through: UInt64 = 0) -> RecordBody {
                let identity = factory.authors[index]
                return .member(
                    MemberChange(
                        group: group,
                        action: action,
                        node: identity.node,
                        log: identity.author,
                        through: through
                    )
                )
            }
            factory.make(.group(GroupFounding(node: factory.authors[0].node, name: "Family", open: false)), by: 0)
            factory.make(member(.admin, 1), by: 0)
            factory.make(member(.add, 2), by: 0)
            factory.make(member(.add, 4), by: 0)
            let byF = PostID(factory.make(Self.post("F's lake"), by: 0).id)
            factory.make(member(.add, 3), by: 1)
            let byA = PostID(factory.make(Self.post("A's forest"), by: 1).id)
            factory.make(member(.add, 5), by: 1)
            let byM = PostID(factory.make(Self.post("M's beach"), by: 2).id)
            factory.make(.comment(post: byF, text: "M on F's lake"), by: 2)
            factory.make(.comment(post: byA, text: "N on A's forest"), by: 3)
            factory.make(Reaction(post: byF, emoji: .heart).body, by: 3)
            let byO = PostID(factory.make(Self.post("O's meadow"), by: 4).id)
            factory.make(member(.remove, 4, through: 1), by: 0)
            factory.make(member(.remove, 1, through: 2), by: 0)
            // Away, another group (founded by 6, with Q, 7): Q's comment on F's post is never shown (§2.7).
            let away = GroupID(founder: factory.authors[6].author)
            factory.make(.group(GroupFounding(node: factory.authors[6].node, name: "Away", open: false)), by: 6)
            factory.make(
                .member(
                    MemberChange(
                        group: away,
                        action: .add,
                        node: factory.authors[7].node,
                        log: factory.authors[7].author
                    )
                ),
                by: 6
            )
            factory.make(.comment(post: byF, text: "Q from another group"), by: 7)
            self.factory = factory
            posts = ["F": byF, "A": byA, "M": byM, "O": byO]
        }

        static func post(_ caption: String) -> RecordBody {
            .post(
                caption: caption,
                photo: TestPhoto.reference(caption),
                location: nil
            )
        }
    }

    /// What a node shows: each member's log with whether it is an admin and what its removal kept, the feed's
    /// captions with their comments and reactions.
    struct Seen: Equatable {
        var members: [String: String] = [:]
        var posts: [String] = []

        static func of(_ store: ContinuumStore, _ history: History) async throws -> Seen {
            var seen = Seen()
            let names = Dictionary(
                uniqueKeysWithValues: zip(
                    history.factory.authors.map(\.author),
                    ["F", "A", "M", "N", "O", "P", "G", "Q"]
                )
            )
            for member in try await store.members(of: history.group) {
                let removal = member.removedThrough.map { "removed through \($0)" } ?? "member"
                seen.members[names[member.log] ?? member.log.short] = "\(removal)\(member.admin ? ", admin" : "")"
            }
            for post in try await store.feed(FeedQuery(limit: 50)).posts {
                let comments = try await store.post(post.id)?.comments.map(\.text) ?? []
                let reactions = post.reactions.counts.map { "\($0.emoji.name) \($0.count)" }
                seen.posts.append(([post.caption] + comments + reactions).joined(separator: " | "))
            }
            seen.posts.sort()
            return seen
        }
    }

    /// §5.1 worked by hand: F founds and stays admin; A's records up to its removal's `through` (2) stand, so its add
    /// of N does and its later add of P does not; O is removed keeping its one post.
    static let expected = Seen(
        members: [
            "F": "member, admin", "A": "removed through 2", "M": "member", "N": "member", "O": "removed through 1",
        ],
        posts: [
            "A's forest | N on A's forest", "F's lake | M on F's lake | heart 1", "M's beach", "O's meadow",
        ]
    )

    /// The order with each log's records moved after the record that places the log, their own order kept.
    static func deliverable(_ order: [VerifiedRecord]) -> [VerifiedRecord] {
        var placed: Set<AuthorID> = []
        var waiting: [AuthorID: [VerifiedRecord]] = [:]
        var result: [VerifiedRecord] = []
        func emit(_ record: VerifiedRecord) {
            result.append(record)
            var logs: [AuthorID] = []
            switch record.header.references {
            case .group: logs = [record.header.author]
            case .member(let change) where change.action != .remove: logs = [change.log]
            default: break
            }
            for log in logs where placed.insert(log).inserted {
                for held in waiting.removeValue(forKey: log) ?? [] { emit(held) }
            }
        }
        for record in order {
            if placed.contains(record.header.author) || record.header.kind == .group {
                emit(record)
            } else {
                waiting[record.header.author, default: []].append(record)
            }
        }
        return result
    }

    @Test("the records in their logs' order, one batch: the members and feed of §5.1")
    func inOrder() async throws {
        let history = History()
        let temporary = try TemporaryStore()
        _ = try await temporary.store.ingest(history.records)
        #expect(try await Seen.of(temporary.store, history) == Self.expected)
    }

    @Test("334 rounds of three nodes, each given the records in a random order and random batches of 1 … 8")
    func randomOrdersAndBatchings() async throws {
        let history = History()
        var random = SplitMix64(seed: 2026_11_27)
        var orders = 0
        var memberAfterContent = 0
        for round in 0..<334 {
            var seen: [Seen] = []
            for _ in 0..<3 {
                let order = Self.deliverable(history.records.shuffled(using: &random))
                #expect(order.count == history.records.count)
                let firstContent = order.firstIndex { !$0.header.kind.isMembership } ?? 0
                let lastMember = order.lastIndex { $0.header.kind.isMembership } ?? 0
                if lastMember > firstContent { memberAfterContent += 1 }
                let temporary = try TemporaryStore()
                for batch in order.chunked(by: &random, max: 8) { _ = try await temporary.store.ingest(batch) }
                seen.append(try await Seen.of(temporary.store, history))
                orders += 1
            }
            #expect(seen.allSatisfy { $0 == Self.expected }, "round \(round): \(seen)")
        }
        #expect(orders == 1_002)
        // The orders must mix member records in among the content, or the test could not fail.
        #expect(memberAfterContent > 900)
    }
}
