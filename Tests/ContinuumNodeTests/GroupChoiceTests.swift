import ContinuumCore
import ContinuumNode
import ContinuumStore
import Testing

@Suite("GroupChoice: a group by its name or the start of its id")
struct GroupChoiceTests {
    /// The error that choosing `text` throws.
    static func failure(_ text: String, in store: ContinuumStore) async -> StoreError? {
        await #expect(throws: StoreError.self) { try await GroupChoice.resolve(text, in: store) }
    }

    @Test("empty text is refused, even when the node has only one group")
    func empty() async throws {
        let fixture = try Fixture()
        _ = try await fixture.store.createGroup(name: "Family", open: false, by: fixture.me)
        let error = await Self.failure("", in: fixture.store)
        #expect(error?.code == .invalidInput)
        #expect(error?.message == "'' is not an id: ids are 1 to 64 hex digits (0-9, a-f)")
    }

    @Test("a name, a unique prefix in either case, or the whole id names the group")
    func found() async throws {
        let fixture = try Fixture()
        let family = try await fixture.store.createGroup(name: "Family", open: false, by: fixture.me)
        let work = try await fixture.store.createGroup(name: "Work", open: false, by: fixture.me)
        #expect(try await GroupChoice.resolve("Work", in: fixture.store) == work)
        #expect(try await GroupChoice.resolve("Family", in: fixture.store) == family)
        #expect(try await GroupChoice.resolve(String(work.hex.prefix(12)), in: fixture.store) == work)
        #expect(try await GroupChoice.resolve(family.hex.prefix(12).uppercased(), in: fixture.store) == family)
        #expect(try await GroupChoice.resolve(family.hex, in: fixture.store) == family)
    }

    @Test("a mistyped name: not found, with the node's groups")
    func mistyped() async throws {
        let fixture = try Fixture()
        let family = try await fixture.store.createGroup(name: "Family", open: false, by: fixture.me)
        let error = await Self.failure("Famly", in: fixture.store)
        #expect(error?.code == .notFound)
        #expect(
            error?.message
                == "no group of this node is called or starts with 'Famly'; its groups: Family (\(family.short))"
        )
    }

    @Test("two groups of one name: ambiguous, both listed")
    func ambiguous() async throws {
        let fixture = try Fixture()
        let first = try await fixture.store.createGroup(name: "Family", open: false, by: fixture.me)
        let second = try await fixture.store.createGroup(name: "Family", open: false, by: fixture.me)
        _ = try await fixture.store.createGroup(name: "Work", open: false, by: fixture.me)
        let error = await Self.failure("Family", in: fixture.store)
        #expect(error?.code == .ambiguous)
        let message = try #require(error?.message)
        #expect(message.hasPrefix("'Family' matches 2 groups: "))
        #expect(message.hasSuffix("; give more of the id"))
        #expect(message.contains("Family (\(first.short))") && message.contains("Family (\(second.short))"))
        #expect(!message.contains("Work"))
    }
}
