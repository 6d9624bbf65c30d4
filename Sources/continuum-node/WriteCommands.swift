import ArgumentParser
import ContinuumCore
import ContinuumMedia
import ContinuumStore
import Foundation
import Logging

struct PostCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "post",
        abstract: "Share a photo with a caption. Prints the new post's id.",
        discussion: """
            JPEG, PNG, HEIC, WebP and GIF are recognised by their content, whatever the file is called. Every pixel \
            is decoded first: a damaged photo (truncated, or garbage after a valid header) is refused and nothing \
            is stored. Without --location, the photo's EXIF GPS position is used; without --created-at, its EXIF \
            date taken (read as UTC when the photo gives no time zone), else now.
            """
    )

    @OptionGroup var options: DataOptions
    @OptionGroup var output: OutputOptions

    @Argument(help: ArgumentHelp("The photo file.", valueName: "IMAGE"))
    var image: String

    @Option(help: "The caption (required; up to 2048 bytes of UTF-8).")
    var caption: String?

    @Option(
        help: ArgumentHelp(
            "Where the photo was taken, in decimal degrees (default: the photo's EXIF GPS position, if any).",
            valueName: "LAT,LON"
        )
    )
    var location: String?

    @Option(
        name: .customLong("created-at"),
        help: ArgumentHelp(
            "The post's time, RFC 3339 (default: the photo's EXIF date taken, else now).",
            valueName: "TIME"
        )
    )
    var createdAt: String?

    @Flag(
        name: .customLong("no-auto-follow"),
        help: "Do not follow the new post (by default you follow your own posts, and are notified of comments)."
    )
    var noAutoFollow = false

    func validate() throws {
        guard let caption, !TextRules.isBlank(caption) else {
            throw ValidationError("a caption is required and must not be blank: --caption TEXT")
        }
        if let location { _ = try Parse.coordinate(location, option: "--location") }
        if let createdAt { _ = try Self.time(createdAt) }
    }

    /// An RFC 3339 time (`2024-07-14T16:20:00Z`, `2024-07-14T18:20:00.250+02:00`) between 1970 and 9999.
    static func time(_ text: String) throws -> Timestamp {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        var date = formatter.date(from: text)
        if date == nil {
            formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            date = formatter.date(from: text)
        }
        guard let date, (0...Limits.latestTimestamp).contains(Timestamp(date).milliseconds) else {
            throw ValidationError(
                "--created-at '\(text)' is not an RFC 3339 time between 1970 and 9999, such as 2024-07-14T16:20:00Z"
            )
        }
        return Timestamp(date)
    }

    func run() async throws {
        let context = try options.open()
        let identity = try context.identity()
        let url = URL(fileURLWithPath: image)
        let data: Data
        do {
            data = try Data(contentsOf: url, options: .alwaysMapped)
        } catch {
            throw CLIError("cannot read \(image): \(Self.reason(error))")
        }
        let info: ImageInfo
        let metadata: PhotoMetadata
        do {
            // The header first (the same errors as before for what is not an image), then every pixel.
            _ = try ImageProbe.inspect(data)
            (info, metadata) = try PhotoIntake.inspect(file: url)
        } catch {
            throw CLIError("\(image): \(error)")
        }
        let created: Timestamp =
            if let createdAt { try Self.time(createdAt) } else { metadata.takenAt.map(Timestamp.init) ?? .now() }
        let body = RecordBody.post(
            caption: caption ?? "",
            photo: PhotoReference(
                sha256: AssetHash.of(data),
                byteCount: UInt64(data.count),
                mediaType: info.mediaType,
                width: info.width,
                height: info.height
            ),
            location: try location.map { try Parse.coordinate($0, option: "--location") } ?? metadata.location
        )
        // Check the record before touching the disk, so a refused post stores nothing at all.
        try CLIError.check(body)
        let hash = try await context.store.storePhoto(data)
        let record = try await context.store.append(
            body,
            createdAt: created,
            by: identity,
            autoFollow: !noAutoFollow
        )
        // The thumbnail now, while the photo is in the page cache (a running node would make it on first use).
        let thumbnails = ThumbnailService(store: context.store, logger: Logger(label: "continuum"))
        _ = try? await thumbnails.thumbnail(for: hash)
        let id = PostID(record.id)
        context.tellRunningNode(followsChanged: !noAutoFollow)
        if output.json {
            return try Output.json(try await context.store.post(id))
        }
        print(id.hex)
    }

    /// Why a path cannot be read, in the words of the system (no Foundation error codes).
    static func reason(_ error: any Error) -> String {
        var isDirectory: ObjCBool = false
        let path = (error as NSError).userInfo[NSFilePathErrorKey] as? String
        if let path {
            if !FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) { return "no such file" }
            if isDirectory.boolValue { return "it is a directory, not a file" }
            if !FileManager.default.isReadableFile(atPath: path) { return "permission denied" }
        }
        if let posix = (error as NSError).userInfo[NSUnderlyingErrorKey] as? NSError {
            return String(cString: strerror(Int32(posix.code)))
        }
        return (error as NSError).localizedDescription
    }
}

struct CommentCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "comment",
        abstract: "Comment on a post. Prints the new comment's id."
    )

    @OptionGroup var options: DataOptions
    @OptionGroup var output: OutputOptions

    @Argument(help: ArgumentHelp("The post's id, or a unique prefix of it.", valueName: "POST"))
    var post: String

    @Argument(help: "The comment (up to 4096 bytes of UTF-8).")
    var text: String

    func validate() throws {
        if TextRules.isBlank(text) { throw ValidationError("the comment is blank; write something") }
    }

    func run() async throws {
        let context = try options.open()
        let identity = try context.identity()
        let postID = try await context.store.resolvePost(post)
        let body = RecordBody.comment(post: postID, text: text)
        try CLIError.check(body)
        let record = try await context.store.append(body, by: identity)
        context.tellRunningNode()
        if output.json {
            return try Output.json(["id": record.id.hex, "post": postID.hex])
        }
        print(record.id.hex)
    }
}

struct EditCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "edit",
        abstract: "Change the caption of one of your own posts."
    )

    @OptionGroup var options: DataOptions
    @OptionGroup var output: OutputOptions

    @Argument(help: ArgumentHelp("The post's id, or a unique prefix of it.", valueName: "POST"))
    var post: String

    @Option(help: "The new caption.")
    var caption: String

    func validate() throws {
        if TextRules.isBlank(caption) { throw ValidationError("the new caption is blank") }
    }

    func run() async throws {
        let context = try options.open()
        let identity = try context.identity()
        guard case .post(let postID, let author) = try await context.store.resolveTarget(post) else {
            throw CLIError("\(post) is a comment; only posts have captions")
        }
        try await CLIError.requireOwner(author, of: "post \(postID.short)", identity: identity, store: context.store)
        let body = RecordBody.edit(post: postID, caption: caption)
        try CLIError.check(body)
        let record = try await context.store.append(body, by: identity)
        context.tellRunningNode()
        if output.json { return try Output.json(try await context.store.post(postID)) }
        print(record.id.hex)
    }
}

struct DeleteCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "delete",
        abstract: "Delete some of your own posts or comments.",
        discussion: "Nothing is deleted unless every id names a post or comment of yours."
    )

    @OptionGroup var options: DataOptions
    @OptionGroup var output: OutputOptions

    @Argument(help: ArgumentHelp("Post or comment ids, or unique prefixes.", valueName: "ID"))
    var ids: [String]

    func validate() throws {
        if ids.isEmpty { throw ValidationError("name at least one post or comment to delete") }
    }

    func run() async throws {
        let context = try options.open()
        let identity = try context.identity()
        var targets = Set<RecordID>()
        for text in ids {
            let target = try await context.store.resolveTarget(text)
            let noun = if case .post = target { "post" } else { "comment" }
            try await CLIError.requireOwner(
                target.author,
                of: "\(noun) \(target.record.short)",
                identity: identity,
                store: context.store
            )
            targets.insert(target.record)
        }
        let sorted = targets.sorted()
        // One Delete record per 256 targets, all in one transaction: all of them, or none.
        let bodies = stride(from: 0, to: sorted.count, by: Limits.deleteTargets).map { start in
            RecordBody.delete(targets: Array(sorted[start..<min(start + Limits.deleteTargets, sorted.count)]))
        }
        let records = try await context.store.append(bodies, by: identity).map(\.id)
        context.tellRunningNode()
        if output.json {
            return try Output.json(["deleted": sorted.map(\.hex), "records": records.map(\.hex)])
        }
        for target in sorted { print("deleted \(target.hex)") }
    }
}

/// An error for a person: one line, no usage text.
struct CLIError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }

    /// Checks the fields a new record would have, before anything is stored.
    static func check(_ body: RecordBody) throws {
        do {
            try ContinuumStore.check(body)
        } catch {
            throw CLIError(error.message)
        }
    }

    /// Refuses to act on another author's record.
    static func requireOwner(
        _ author: AuthorID,
        of what: String,
        identity: NodeIdentity,
        store: ContinuumStore
    )
        async throws
    {
        do {
            try await store.requireOwner(author, of: what, identity: identity)
        } catch let error as StoreError {
            throw CLIError(error.message)
        }
    }
}
