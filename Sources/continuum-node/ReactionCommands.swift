import ArgumentParser
import ContinuumCore
import ContinuumNode
import ContinuumStore

struct ReactCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "react",
        abstract: "React to a post or a comment: ❤️ 👍 😂 😮 😢 🙏 (or heart, thumbsup, laugh, wow, sad, thanks).",
        discussion: """
            Your reaction replaces the one you gave it before; 'unreact' takes it back. Everyone in the post's group \
            sees the counts, and the author of the post or comment is notified. Reactions go with their post when \
            its author deletes it.
            """
    )

    @OptionGroup var options: DataOptions
    @OptionGroup var output: OutputOptions

    @Argument(help: ArgumentHelp("The post or comment: its id or a unique prefix.", valueName: "POST|COMMENT"))
    var target: String

    @Argument(help: ArgumentHelp("The reaction: the emoji, or its name.", valueName: "EMOJI"))
    var emoji: String

    func validate() throws {
        guard ReactionEmoji(typed: emoji) != nil else { throw ValidationError(Self.unknown(emoji)) }
    }

    /// The error for a reaction outside the set.
    static func unknown(_ typed: String) -> String {
        let choices = ReactionEmoji.shown.map { "\($0.symbol) \($0.name)" }.joined(separator: ", ")
        return "'\(typed)' is not a reaction; choose one of \(choices)"
    }

    func run() async throws {
        guard let reaction = ReactionEmoji(typed: emoji) else { throw ValidationError(Self.unknown(emoji)) }
        try await ReactionCommands.react(target, with: reaction, options, output)
    }
}

struct UnreactCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "unreact",
        abstract: "Take back your reaction to a post or a comment."
    )

    @OptionGroup var options: DataOptions
    @OptionGroup var output: OutputOptions

    @Argument(help: ArgumentHelp("The post or comment: its id or a unique prefix.", valueName: "POST|COMMENT"))
    var target: String

    func run() async throws {
        try await ReactionCommands.react(target, with: .none, options, output)
    }
}

/// What `react` and `unreact` share.
enum ReactionCommands {
    static func react(
        _ text: String,
        with emoji: ReactionEmoji,
        _ options: DataOptions,
        _ output: OutputOptions
    )
        async throws
    {
        let context = try options.open()
        let identity = try context.identity()
        let target = try await context.store.resolveTarget(text)
        if emoji == .none, try await context.store.reactions(to: target.record, viewer: identity.author).mine == nil {
            throw CLIError("you have not reacted to \(text); nothing to take back")
        }
        let record = try await context.actions().react(to: target, with: emoji, by: identity)
        let counts = try await context.store.reactions(to: target.record, viewer: identity.author)
        let noun = if case .post = target { "post" } else { "comment" }
        if output.json {
            return try Output.json(
                ReactionResultJSON(
                    target: target.record.hex,
                    record: record.hex,
                    mine: (counts.mine ?? .none).name,
                    counts: counts
                )
            )
        }
        let done = counts.mine.map { "reacted \($0.symbol) to" } ?? "took back your reaction to"
        print("\(done) \(noun) \(target.record.short)\(Output.reactions(counts).map { ": \($0)" } ?? "")")
    }
}

/// `react --json`: the record signed, this node's reaction now (`none` once taken back) and the counts.
struct ReactionResultJSON: Encodable {
    let target: String
    let record: String
    let mine: String
    let reactions: [ReactionCountJSON]

    init(target: String, record: String, mine: String, counts: ReactionCounts) {
        self.target = target
        self.record = record
        self.mine = mine
        reactions = ReactionCountJSON.list(counts)
    }
}
