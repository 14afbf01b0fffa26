<?php

declare(strict_types=1);

namespace OCA\Tamebi\Service\Registry;

use OCA\Tamebi\Http\ApiError;

/**
 * The errors of the registry's OCS routes (servers, assistants, personal assistants; issue #30).
 * Messages are our own fixed text; what the orchestrator said travels only as the cause, logged.
 */
final class RegistryError extends ApiError {
	public const INTERNAL_MESSAGE = 'The Tamebi registry failed; the details are in the Nextcloud log';
	public const CONFLICT_MESSAGE = 'This name is already taken, is set in the orchestrator\'s own configuration (read-only here), or the entry changed meanwhile. Reload and try again.';
	public const REFUSED_MESSAGE = 'The orchestrator refused this entry. Check its fields against what is allowed (for a personal assistant: the tools your administrator allows personal assistants).';
	public const UNREACHABLE_MESSAGE = 'The orchestrator could not be reached. Try again in a moment.';

	/** The name exists, is the operator's (read-only), or the entry changed since it was read. */
	public static function conflict(): self {
		return new self(409, 'conflict', self::CONFLICT_MESSAGE);
	}

	/** The orchestrator's own validation refused it (it re-checks everything this app checks). */
	public static function refused(?\Throwable $cause = null): self {
		return new self(400, 'refused', self::REFUSED_MESSAGE, $cause);
	}

	public static function unreachable(?\Throwable $cause = null): self {
		return new self(502, 'orchestrator_unreachable', self::UNREACHABLE_MESSAGE, $cause);
	}
}
