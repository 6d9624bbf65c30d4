import ArgumentParser
import ContinuumCore
import ContinuumMedia
import ContinuumNode
import ContinuumStore
import Foundation

struct PostCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "post",
        abstract: "Share a photo with a caption. Prints the new post's id.",
        discussion: """
            JPEG, PNG, HEIC, WebP and GIF are recognised by their content, whatever the file is called. Every pixel \
            is decoded first: a damaged photo (truncated, or garbage after a valid header) is refused and nothing \
            is stored. The post's time is when it is posted; when the photo was taken comes from --taken-at, else \
            its EXIF date taken (read as UTC when the photo gives no time zone), and is shown beside it.

            The location stays home: the post has a location only with --location or --location-from-photo, and \
            the photo is stored and sent without its GPS position and place names (removed losslessly: the pixels \
            are not re-encoded; orientation, date taken and colour profile are kept). With --location-from-photo \
            or --keep-metadata the photo is posted as it is. A photo whose location cannot be removed (a HEIC with \
            a GPS position) is refused unless --keep-metadata.
            """
    )

    @OptionGroup var options: DataOptions
    @OptionGroup var output: OutputOptions

    @Argument(help: ArgumentHelp("The photo file.", valueName: "IMAGE"))
    var image: String

    @Option(
        help: ArgumentHelp(
            "The group to share it with: its name or the start of its id (default: the node's only group).",
            valueName: "G"
        )
    )
    var group: String?

    @Option(help: "The caption (required; up to 2048 bytes of UTF-8).")
    var caption: String?

    @Option(
        help: ArgumentHelp(
            "Where the photo was taken, in decimal degrees (default: no location).",
            valueName: "LAT,LON"
        )
    )
    var location: String?

    @Flag(
        name: .customLong("location-from-photo"),
        help: "Share the GPS position in the photo's EXIF as the post's location (refused when it has none)."
    )
    var locationFromPhoto = false

    @Flag(
        name: .customLong("keep-metadata"),
        help: "Post the photo's bytes as they are, GPS position included (by default the location is removed)."
    )
    var keepMetadata = false

    @Option(
        name: .customLong("taken-at"),
        help: ArgumentHelp(
            "When the photo was taken, RFC 3339 (default: the photo's EXIF date taken, if any).",
            valueName: "TIME"
        )
    )
    var takenAt: String?

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
        if location != nil, locationFromPhoto {
            throw ValidationError("give either --location LAT,LON or --location-from-photo, not both")
        }
        if let takenAt { _ = try Self.time(takenAt) }
    }

    /// An RFC 3339 time (`2024-07-14T16:20:00Z`, `2024-07-14T18:20:00.250+02:00`) between 1970 and 9999.
    static func time(_ text: String, option: String = "--taken-at") throws -> Timestamp {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        var date = formatter.date(from: text)
        if date == nil {
            formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            date = formatter.date(from: text)
        }
        guard let date, (0...Limits.latestTimestamp).contains(Timestamp(date).milliseconds) else {
            throw ValidationError(
                "\(option) '\(text)' is not an RFC 3339 time between 1970 and 9999, such as 2024-07-14T16:20:00Z"
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
        var groupID: GroupID?
        if let group { groupID = try await GroupChoice.resolve(group, in: context.store) }
        let draft = NewPost(
            photo: .file(url, contents: data),
            caption: caption ?? "",
            location: try location.map { try Parse.coordinate($0, option: "--location") },
            takenAt: try takenAt.map { try Self.time($0) },
            autoFollow: !noAutoFollow,
            locationFromPhoto: locationFromPhoto,
            keepMetadata: keepMetadata,
            group: groupID
        )
        let id: PostID
        do {
            id = try await context.actions().post(draft, by: identity)
        } catch PhotoRefusal.notAnImage(let why), PhotoRefusal.corrupt(let why) {
            throw CLIError("\(image): \(why)")
        } catch PhotoRefusal.noLocation(let why) {
            throw CLIError("\(image): \(why); give one with --location LAT,LON, or post it without a location")
        } catch let error as MediaError {
            throw CLIError("\(image): \(error)")
        }
        if try await context.store.groups().isEmpty {
            FileHandle.standardError.write(
                Data(
                    ("this post stays on this node: it belongs to no group (create one with 'continuum-node group "
                        + "create NAME', or join one with 'continuum-node join CODE')\n").utf8
                )
            )
        }
        if output.json {
            return try Output.json(try await context.store.post(id, viewer: context.viewer()).map { PostJSON($0) })
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
        let id = try await context.actions().comment(on: postID, text: text, by: identity)
        if output.json {
            return try Output.json(["id": id.hex, "post": postID.hex])
        }
        print(id.hex)
    }
}

struct EditCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "edit",
        abstract: "Change the caption, the photo or the location of one of your own posts.",
        discussion: """
            One Edit record carries every change given, and followers are notified once. A new photo is decoded \
            whole first, like a new post's; the photo it replaces is erased, here and on every peer, unless another \
            live post shows it.
            """
    )

    @OptionGroup var options: DataOptions
    @OptionGroup var output: OutputOptions

    @Argument(help: ArgumentHelp("The post's id, or a unique prefix of it.", valueName: "POST"))
    var post: String

    @Option(help: "The new caption.")
    var caption: String?

    @Option(help: ArgumentHelp("A new photo file, which replaces the post's.", valueName: "IMAGE"))
    var photo: String?

    @Option(
        name: .customLong("taken-at"),
        help: ArgumentHelp(
            "When the new photo was taken, RFC 3339 (default: its EXIF date taken, if any). Only with --photo.",
            valueName: "TIME"
        )
    )
    var takenAt: String?

    @Option(help: ArgumentHelp("A new location, in decimal degrees.", valueName: "LAT,LON"))
    var location: String?

    @Flag(name: .customLong("no-location"), help: "Remove the post's location.")
    var noLocation = false

    @Flag(
        name: .customLong("keep-metadata"),
        help: "Post the new photo's bytes as they are, GPS position included (by default the location is removed)."
    )
    var keepMetadata = false

    func validate() throws {
        if let caption, TextRules.isBlank(caption) { throw ValidationError("the new caption is blank") }
        if caption == nil && photo == nil && location == nil && !noLocation {
            throw ValidationError("nothing to change: give --caption, --photo, --location or --no-location")
        }
        if location != nil && noLocation { throw ValidationError("--location and --no-location contradict") }
        if let location { _ = try Parse.coordinate(location, option: "--location") }
        if takenAt != nil && photo == nil { throw ValidationError("--taken-at needs --photo: it is the new photo's") }
        if keepMetadata && photo == nil {
            throw ValidationError("--keep-metadata needs --photo: it is the new photo's")
        }
        if let takenAt { _ = try PostCommand.time(takenAt, option: "--taken-at") }
    }

    func run() async throws {
        let context = try options.open()
        let identity = try context.identity()
        guard case .post(let postID, _) = try await context.store.resolveTarget(post) else {
            throw CLIError("\(post) is a comment; only posts can be edited")
        }
        var change = PostEdit(
            caption: caption,
            takenAt: try takenAt.map { try PostCommand.time($0, option: "--taken-at") }
        )
        if let location { change.location = .set(try Parse.coordinate(location, option: "--location")) }
        if noLocation { change.location = .removed }
        change.keepMetadata = keepMetadata
        if let photo {
            let url = URL(fileURLWithPath: photo)
            do {
                change.photo = .file(url, contents: try Data(contentsOf: url, options: .alwaysMapped))
            } catch {
                throw CLIError("cannot read \(photo): \(PostCommand.reason(error))")
            }
        }
        let edit: RecordID
        do {
            edit = try await context.actions().edit(postID, change, by: identity)
        } catch PhotoRefusal.notAnImage(let why), PhotoRefusal.corrupt(let why) {
            throw CLIError("\(photo ?? post): \(why)")
        } catch let error as MediaError {
            throw CLIError("\(photo ?? post): \(error)")
        }
        if output.json {
            return try Output.json(try await context.store.post(postID, viewer: context.viewer()).map { PostJSON($0) })
        }
        print(edit.hex)
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
        let actions = context.actions()
        var targets: [ContinuumStore.Target] = []
        for text in ids {
            let target = try await context.store.resolveTarget(text)
            // Each id checked as it is named, so that the first one in error is the one reported.
            try await actions.requireOwner(target, identity: identity)
            targets.append(target)
        }
        let deletion = try await actions.delete(targets, by: identity)
        if output.json {
            return try Output.json(["deleted": deletion.targets.map(\.hex), "records": deletion.records.map(\.hex)])
        }
        for target in deletion.targets { print("deleted \(target.hex)") }
    }
}

/// An error for a person: one line, no usage text.
struct CLIError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
