import ContinuumCore
import Testing

@Suite("IDLookup: one thing named by the start of its id, or by its name")
struct IDLookupTests {
    /// An id of 64 hex digits: `start`, then zeros.
    static func id(_ start: String) -> AuthorID {
        AuthorID(hex: start + String(repeating: "0", count: 64 - start.count))!
    }

    /// Alice (log ab12…, node 77aa…), Bob (log ab34…, node 9c00…) and an unnamed one (log 5e00…).
    static let candidates = [
        IDCandidate("alice", ids: [id("ab12"), NodeID(unchecked: id("77aa").bytes)], name: "Alice"),
        IDCandidate("bob", ids: [id("ab34"), NodeID(unchecked: id("9c").bytes)], name: "Bob"),
        IDCandidate("unnamed", ids: [id("5e")]),
    ]

    /// The error that looking up `text` throws, as a person reads it.
    static func failure(_ text: String, among candidates: [IDCandidate<String>] = candidates) -> String? {
        let error = #expect(throws: IDLookupError<String>.self) { try IDLookup.resolve(text, among: candidates) }
        return error?.description
    }

    @Test("a unique prefix, of any of a candidate's ids, names it")
    func uniquePrefix() throws {
        #expect(try IDLookup.resolve("ab1", among: Self.candidates) == "alice")
        #expect(try IDLookup.resolve("ab34", among: Self.candidates) == "bob")
        #expect(try IDLookup.resolve("9c", among: Self.candidates) == "bob")
        #expect(try IDLookup.resolve("5", among: Self.candidates) == "unnamed")
        #expect(try IDLookup.resolve("ab12" + String(repeating: "0", count: 60), among: Self.candidates) == "alice")
    }

    @Test("upper-case hex works as lower-case")
    func upperCase() throws {
        #expect(try IDLookup.resolve("AB1", among: Self.candidates) == "alice")
        #expect(try IDLookup.resolve("9C0", among: Self.candidates) == "bob")
    }

    @Test("a name names its candidate, exactly")
    func name() throws {
        #expect(try IDLookup.resolve("Bob", among: Self.candidates) == "bob")
        #expect(Self.failure("bob") == "'bob' is not an id: ids are 1 to 64 hex digits (0-9, a-f)")
        #expect(Self.failure(" Bob") == "' Bob' is not an id: ids are 1 to 64 hex digits (0-9, a-f)")
    }

    @Test("empty text names nothing, not everything, even a candidate whose name is empty")
    func empty() {
        #expect(Self.failure("") == "'' is not an id: ids are 1 to 64 hex digits (0-9, a-f)")
        let one = [IDCandidate("only", ids: [Self.id("ab")], name: "")]
        #expect(Self.failure("", among: one) == "'' is not an id: ids are 1 to 64 hex digits (0-9, a-f)")
        #expect(!one[0].isNamed(by: ""))
    }

    @Test("text that is neither hex nor a name is not an id; 65 digits are not one either")
    func notAnID() {
        #expect(Self.failure("xyz") == "'xyz' is not an id: ids are 1 to 64 hex digits (0-9, a-f)")
        #expect(Self.failure("ab1g") == "'ab1g' is not an id: ids are 1 to 64 hex digits (0-9, a-f)")
        let long = String(repeating: "a", count: 65)
        #expect(Self.failure(long) == "'\(long)' is not an id: ids are 1 to 64 hex digits (0-9, a-f)")
    }

    @Test("a prefix of no id is not found")
    func notFound() {
        #expect(Self.failure("ff") == "nothing matches 'ff'")
        #expect(Self.failure("ab12", among: []) == "nothing matches 'ab12'")
    }

    @Test("a prefix of several lists them by the start of their first id")
    func ambiguous() {
        #expect(Self.failure("ab") == "'ab' matches 2: ab1200000000, ab3400000000; type more digits")
        #expect(Self.failure("A") == "'A' matches 2: ab1200000000, ab3400000000; type more digits")
    }

    @Test("one candidate's name and another's id prefix are ambiguous, as before")
    func nameAndPrefix() {
        let candidates = [
            IDCandidate("cafe", ids: [Self.id("01")], name: "cafe"), IDCandidate("x", ids: [Self.id("cafe")]),
        ]
        #expect(
            Self.failure("cafe", among: candidates) == "'cafe' matches 2: 010000000000, cafe00000000; type more digits"
        )
    }

    @Test("more than ten matches: ten listed, then …")
    func manyMatches() {
        let candidates = (0..<12).map { IDCandidate($0, ids: [Self.id("a0" + String($0, radix: 16))]) }
        let error = #expect(throws: IDLookupError<Int>.self) { try IDLookup.resolve("a", among: candidates) }
        #expect(
            error?.description
                == "'a' matches 12: a00000000000, a01000000000, a02000000000, a03000000000, a04000000000, "
                + "a05000000000, a06000000000, a07000000000, a08000000000, a09000000000, …; type more digits"
        )
    }

    @Test("IDPrefix.matches: the id starts with the digits")
    func prefixMatches() throws {
        let prefix = try #require(IDPrefix("AB1"))
        #expect(prefix.matches(Self.id("ab12")))
        #expect(!prefix.matches(Self.id("ab34")))
        #expect(!prefix.matches(Self.id("0ab1")))
    }
}
