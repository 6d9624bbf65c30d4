/// What a person types before the parser sees it: `--data DIR` (and `--log-level L`) before the command are moved
/// after it, where every command takes them; and a command that does not exist is named, with the one meant when
/// it is close, rather than reported as "unexpected arguments".
enum CommandLineRepair {
    enum Outcome: Equatable {
        case run([String])
        case unknown(String)
    }

    /// The options every command takes, which may also come before the command.
    static let movable: Set<String> = ["--data", "--log-level"]

    static func repair(_ arguments: [String], commands: [String]) -> Outcome {
        var moved: [String] = []
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            if movable.contains(argument), index + 1 < arguments.count {
                moved += [argument, arguments[index + 1]]
                index += 2
            } else if movable.contains(where: { argument.hasPrefix($0 + "=") }) {
                moved.append(argument)
                index += 1
            } else {
                break
            }
        }
        guard index < arguments.count else {
            return moved.isEmpty
                ? .run(arguments)
                : .unknown("no command after \(moved[0]): give one, such as 'continuum-node --data DIR status'")
        }
        let command = arguments[index]
        // An option of the root command (--help, --version…) or a known command: as typed, with the moved options
        // after the command and its subcommand words.
        if command.hasPrefix("-") { return .run(arguments) }
        guard commands.contains(command) || command == "help" else {
            let near = commands.filter { distance($0, command) <= 2 || $0.hasPrefix(command) }
            let hint = near.isEmpty ? "" : "; did you mean \(near.map { "'\($0)'" }.joined(separator: " or "))?"
            return .unknown(
                "'\(command)' is not a continuum-node command\(hint) (see 'continuum-node --help' for the list)"
            )
        }
        return .run(Array(arguments[index...]) + moved)
    }

    /// The Levenshtein distance of two short words.
    static func distance(_ a: String, _ b: String) -> Int {
        let a = Array(a)
        let b = Array(b)
        guard !a.isEmpty else { return b.count }
        var previous = Array(0...b.count)
        for (i, x) in a.enumerated() {
            var current = [i + 1]
            for (j, y) in b.enumerated() {
                current.append(min(previous[j + 1] + 1, current[j] + 1, previous[j] + (x == y ? 0 : 1)))
            }
            previous = current
        }
        return previous[b.count]
    }
}
