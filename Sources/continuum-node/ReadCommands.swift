import ArgumentParser
import ContinuumCore
import ContinuumMedia
import ContinuumNode
import ContinuumStore
import Foundation

struct FeedCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "feed",
        abstract: "List posts, newest first, a page at a time."
    )

    @OptionGroup var options: DataOptions
    @OptionGroup var output: OutputOptions

    @Flag(help: "Only your own posts.")
    var mine = false

    @Option(help: ArgumentHelp("Only posts by this author (id or unique prefix).", valueName: "ID"))
    var author: String?

    @Option(help: ArgumentHelp("Only posts since then: 30m, 12h, 5d, 2w, or a date.", valueName: "5d|DATE"))
    var since: String?

    @Option(
        help: ArgumentHelp(
            "Only posts taken near here: LAT,LON, or a city's name (the most populous of that name).",
            valueName: "LAT,LON|CITY"
        )
    )
    var near: String?

    @Option(name: .customLong("radius-km"), help: "Radius for --near, in kilometres (default 10).")
    var radiusKm: Double?

    @Option(help: "Posts per page, 1 to 500.")
    var limit = 20

    @Option(help: "Continue after a previous page: its nextCursor.")
    var cursor: String?

    func validate() throws {
        guard (1...500).contains(limit) else { throw ValidationError("--limit must be 1 to 500") }
        if mine && author != nil { throw ValidationError("--mine and --author cannot be used together") }
        if radiusKm != nil && near == nil { throw ValidationError("--radius-km needs --near LAT,LON or --near CITY") }
        if let radiusKm, !(radiusKm > 0 && radiusKm <= 20_040) {
            throw ValidationError("--radius-km must be more than 0 and at most 20040 (half the Earth)")
        }
        // A city's name is looked up when the command runs; what looks like numbers must be LAT,LON.
        if let near, Gazetteer.looksLikeNumbers(near) {
            _ = try Parse.coordinate(near, option: "--near")
        }
        if let since { _ = try Parse.since(since) }
    }

    func run() async throws {
        let context = try options.open()
        var query = FeedQuery(limit: limit)
        if mine {
            // A node with no identity yet has no posts of its own: an empty feed, as for a fresh directory.
            guard let me = try context.existingIdentity() else {
                if output.json { return try Output.json(FeedPageJSON(.empty)) }
                return print("No posts of yours: this node has no identity yet ('continuum-node init --name NAME').")
            }
            query.mine = me.node
        }
        if let author { query.author = try await context.store.resolveAuthor(author) }
        if let since { query.since = try Parse.since(since) }
        if let near {
            query.near = try Self.place(near)
            query.radiusKm = radiusKm ?? 10
        }
        if let cursor { query.cursor = try FeedCursor(token: cursor) }
        let page = try await context.store.feed(query, viewer: context.viewer())
        if output.json { return try Output.json(FeedPageJSON(page)) }
        let filtered = mine || author != nil || since != nil || near != nil
        if page.posts.isEmpty {
            print(cursor != nil ? "No more posts." : filtered ? "No posts match these filters." : "No posts yet.")
        } else {
            print(page.posts.map(Output.post).joined(separator: "\n\n"))
        }
        if let next = page.nextCursor { print("\nmore: --cursor \(next)") }
    }
}

extension FeedCommand {
    /// `--near`: LAT,LON, or the most populous city of that name in the gazetteer.
    static func place(_ text: String) throws -> Coordinate {
        guard let coordinate = Gazetteer().coordinate(of: text) else {
            throw CLIError("--near '\(text)' is neither LAT,LON in decimal degrees nor a city this node knows")
        }
        return coordinate
    }
}

/// A post's place in words: "Paris, France", or "near Paris, France, 35 km" when the city is further than 15 km.
enum PlaceWords {
    static func describe(_ nearest: (place: Place, distanceKm: Double)) -> String {
        nearest.distanceKm > 15
            ? "near \(nearest.place.title), \(Int(nearest.distanceKm.rounded())) km" : nearest.place.title
    }
}

struct SearchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "search",
        abstract: "Find posts whose caption contains every word of a term, in any order, ignoring case and accents."
    )

    @OptionGroup var options: DataOptions
    @OptionGroup var output: OutputOptions

    @Argument(
        help: ArgumentHelp(
            "What to look for, in one or more words: \"water\" finds \"Waterfall\", \"cafe\" finds \"Café\", "
                + "dusk water (quoted or not) finds \"Waterfall at dusk\".",
            valueName: "word"
        )
    )
    var words: [String] = []

    /// The words as one term, as the search takes it.
    var term: String { words.joined(separator: " ") }

    @Option(help: "At most this many posts, 1 to 500.")
    var limit = 50

    func validate() throws {
        if TextRules.isBlank(term) { throw ValidationError("the search term is blank") }
        guard (1...500).contains(limit) else { throw ValidationError("--limit must be 1 to 500") }
    }

    func run() async throws {
        let context = try options.open()
        let posts = try await context.store.search(
            term,
            limit: limit,
            viewer: context.viewer()
        )
        if output.json { return try Output.json(["posts": posts.map(PostJSON.init)]) }
        if posts.isEmpty {
            print("No posts match '\(term)'.")
        } else {
            print(posts.map(Output.post).joined(separator: "\n\n"))
        }
    }
}

struct ShowCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show",
        abstract: "Show a post and its comments, oldest first."
    )

    @OptionGroup var options: DataOptions
    @OptionGroup var output: OutputOptions

    @Argument(help: ArgumentHelp("The post's id, or a unique prefix of it.", valueName: "POST"))
    var post: String

    func run() async throws {
        let context = try options.open()
        let id = try await context.store.resolvePost(post)
        guard let detail = try await context.store.post(id, viewer: context.viewer()) else {
            throw CLIError("post \(post) was deleted")
        }
        if output.json { return try Output.json(PostJSON(detail)) }
        let summary = detail.post
        print("post     \(summary.id.hex)")
        print("author   \(Output.author(summary.author, summary.authorName))")
        print("posted   \(summary.createdAt.rfc3339)")
        let photo = summary.photo
        if let takenAt = photo.takenAt, takenAt != summary.createdAt { print("taken    \(takenAt.rfc3339)") }
        print(
            "photo    \(photo.mediaType.mimeType) \(photo.width)x\(photo.height), \(photo.bytes) bytes, "
                + "sha256 \(photo.sha256.hex)\(photo.available ? "" : " (not here yet)")"
        )
        if let location = summary.location {
            // The nearest city, from the gazetteer on this machine (GeoNames, offline).
            let place = Gazetteer().nearest(to: location).map { " (\(PlaceWords.describe($0)))" } ?? ""
            print("location \(location.latitude),\(location.longitude)\(place)")
        }
        print("caption\(summary.edited ? " (edited)" : "")")
        for line in summary.caption.split(separator: "\n", omittingEmptySubsequences: false) { print("    \(line)") }
        if let reactions = Output.reactions(summary.reactions) { print("reactions \(reactions)") }
        print("\(detail.comments.count) comment\(detail.comments.count == 1 ? "" : "s")")
        for comment in detail.comments {
            print(
                "  \(comment.id.short)  \(comment.createdAt.rfc3339)  \(Output.author(comment.author, comment.authorName))"
            )
            for line in comment.text.split(separator: "\n", omittingEmptySubsequences: false) { print("      \(line)") }
            if let reactions = Output.reactions(comment.reactions) { print("      \(reactions)") }
        }
    }
}

struct ExportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Write a post's photo (same bytes) and its caption to a folder: the share sheet."
    )

    @OptionGroup var options: DataOptions
    @OptionGroup var output: OutputOptions

    @Argument(help: ArgumentHelp("The post's id, or a unique prefix of it.", valueName: "POST"))
    var post: String

    @Option(help: ArgumentHelp("The folder to write to; created if missing.", valueName: "DIR"))
    var to: String

    struct Result: Encodable {
        let post: PostID
        let photo: String
        let caption: String
        let sha256: AssetHash
    }

    func run() async throws {
        let context = try options.open()
        let id = try await context.store.resolvePost(post)
        guard let summary = try await context.store.post(id)?.post else { throw CLIError("post \(post) was deleted") }
        guard summary.photo.available else {
            throw CLIError("the photo of post \(id.short) is not on this node yet; sync with a peer that has it")
        }
        let folder = URL(fileURLWithPath: to)
        do {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        } catch {
            throw CLIError("cannot create \(to): \(error.localizedDescription)")
        }
        let photoURL = folder.appendingPathComponent("\(id.short).\(summary.photo.mediaType.fileExtension)")
        let captionURL = folder.appendingPathComponent("\(id.short).txt")
        for url in [photoURL, captionURL] where FileManager.default.fileExists(atPath: url.path) {
            throw CLIError("\(url.path) already exists; nothing was written (choose another --to)")
        }
        try await context.store.exportPhoto(summary.photo.sha256, to: photoURL)
        do {
            try Data((summary.caption + "\n").utf8).write(to: captionURL, options: .withoutOverwriting)
        } catch {
            // Best effort: the caption's error is the one reported; a photo file left behind is in the folder it
            // names.
            try? FileManager.default.removeItem(at: photoURL)
            throw CLIError("cannot write \(captionURL.path): \(error.localizedDescription)")
        }
        let result = Result(post: id, photo: photoURL.path, caption: captionURL.path, sha256: summary.photo.sha256)
        if output.json { return try Output.json(result) }
        print(photoURL.path)
        print(captionURL.path)
    }
}
