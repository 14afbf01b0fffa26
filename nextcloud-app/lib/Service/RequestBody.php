<?php

declare(strict_types=1);

namespace OCA\Tamebi\Service;

use OCA\Tamebi\Exception\ProxyError;

/**
 * The raw bytes of the browser's request body. The signature covers these exact bytes, so the
 * body is never re-encoded from Nextcloud's parsed parameters.
 */
class RequestBody {
	public function __construct(
		private string $source = 'php://input',
	) {
	}

	/** @throws ProxyError 413 above BodyGuard::MAX_BYTES */
	public function read(): string {
		$handle = @fopen($this->source, 'rb');
		if ($handle === false) {
			return '';
		}
		$body = stream_get_contents($handle, BodyGuard::MAX_BYTES + 1);
		fclose($handle);
		if ($body === false) {
			return '';
		}
		if (strlen($body) > BodyGuard::MAX_BYTES) {
			throw ProxyError::tooLarge('request body above limit');
		}
		return $body;
	}
}
