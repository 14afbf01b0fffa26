<?php

declare(strict_types=1);

namespace OCA\Tamebi\Http;

use OCA\Tamebi\Service\ErrorShape;
use OCA\Tamebi\Service\UpstreamStream;
use OCP\AppFramework\Http\ICallbackResponse;
use OCP\AppFramework\Http\IOutput;
use OCP\AppFramework\Http\Response;
use OCP\IL10N;
use Psr\Log\LoggerInterface;

/**
 * Passes the orchestrator's SSE answer to the browser as it arrives: each piece curl hands over
 * is written and flushed at once, with every buffer on the way switched off, so the first token
 * reaches the browser when the orchestrator sends it.
 * It must never parse, reorder or hold back the stream. If the upstream breaks mid-way, it ends
 * the stream with one AI SDK `error` part carrying a fixed message and the request id.
 */
class RelayResponse extends Response implements ICallbackResponse {
	public function __construct(
		private UpstreamStream $upstream,
		private string $requestId,
		private LoggerInterface $logger,
		private IL10N $l,
		private bool $endOutputBuffers = true,
	) {
		parent::__construct($upstream->status());
		$this->addHeader('Content-Type', $upstream->header('content-type') ?? 'text/event-stream');
		$protocol = $upstream->header('x-vercel-ai-ui-message-stream');
		if ($protocol !== null) {
			$this->addHeader('x-vercel-ai-ui-message-stream', $protocol);
		}
		// no-transform: proxies must not compress (and so buffer) the stream; nginx reads X-Accel-Buffering.
		$this->addHeader('Cache-Control', 'no-cache, no-store, no-transform');
		$this->addHeader('X-Accel-Buffering', 'no');
	}

	public function callback(IOutput $output): void {
		$this->unbuffer();
		try {
			foreach ($this->upstream->chunks() as $chunk) {
				$output->setOutput($chunk);
				flush();
				if (connection_aborted() === 1) {
					// The browser left; closing our side tells the orchestrator. It can resume later.
					return;
				}
			}
			if ($this->upstream->failed()) {
				$this->logger->error('Tamebi: orchestrator stream broke: ' . $this->upstream->errorText(),
					['app' => 'tamebi', 'requestId' => $this->requestId]);
				$part = ['type' => 'error', 'errorText' => ErrorShape::streamErrorText($this->l, 502, $this->requestId)];
				$output->setOutput("\n\ndata: " . json_encode($part, JSON_UNESCAPED_SLASHES) . "\n\ndata: [DONE]\n\n");
				flush();
			}
		} finally {
			$this->upstream->close();
		}
	}

	/** Turns off everything in PHP that would hold output back; the web server is told by headers. */
	private function unbuffer(): void {
		set_time_limit(0);
		if (!$this->endOutputBuffers) {
			return;
		}
		@ini_set('zlib.output_compression', '0');
		@ini_set('implicit_flush', '1');
		if (function_exists('apache_setenv')) {
			@apache_setenv('no-gzip', '1');
		}
		while (ob_get_level() > 0 && @ob_end_flush()) {
		}
	}
}
